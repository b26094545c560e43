/** Desktop bridge operations: tags (see bridge.ts for the contract every operation keeps). */
import type { BridgeOp } from './bridge.js';

export const BRIDGE_TAG_OPS: BridgeOp[] = [];
