/** Desktop bridge operations: inbox (see bridge.ts for the contract every operation keeps). */
import type { BridgeOp } from './bridge.js';

export const BRIDGE_INBOX_OPS: BridgeOp[] = [];
