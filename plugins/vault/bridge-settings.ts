/** Desktop bridge operations: settings (see bridge.ts for the contract every operation keeps). */
import type { BridgeOp } from './bridge.js';

export const BRIDGE_SETTINGS_OPS: BridgeOp[] = [];
