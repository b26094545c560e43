/** Desktop bridge operations: notes (see bridge.ts for the contract every operation keeps). */
import type { BridgeOp } from './bridge.js';

export const BRIDGE_NOTE_OPS: BridgeOp[] = [];
