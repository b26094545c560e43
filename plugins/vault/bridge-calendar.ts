/** Desktop bridge operations: calendar (see bridge.ts for the contract every operation keeps). */
import type { BridgeOp } from './bridge.js';

export const BRIDGE_CALENDAR_OPS: BridgeOp[] = [];
