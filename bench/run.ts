/** `npm run bench`: every benchmark, each side by side with its baseline in the same run. */
import { benchPipeline } from './pipeline.js';
import { benchAgent } from './agent.js';
import { benchHotReload, benchStartup } from './packs.js';
import { benchFsTools } from './fs-tools.js';
import { benchMcp } from './mcp.js';
import { benchPeers } from './peers.js';
import { benchSandbox } from './sandbox.js';
import { benchHeavy } from './heavy.js';
import { benchScale } from './scale.js';
import { benchVault } from './vault.js';
import { benchWhatsapp } from './whatsapp.js';
import { benchToolSearch } from './tool-search.js';
import { benchAuditSearch } from './audit-search.js';

const only = process.argv[2];
const calls = Number(process.env.BENCH_CALLS ?? 100_000);

console.log(`Memo benchmarks: node ${process.version}, ${process.platform}/${process.arch}`);
if (!only || only === 'pipeline') await benchPipeline(calls);
if (!only || only === 'fs-tools') await benchFsTools();
if (!only || only === 'packs') {
  await benchHotReload();
  await benchStartup();
}
if (!only || only === 'mcp') await benchMcp();
if (!only || only === 'peers') await benchPeers();
if (!only || only === 'agent') await benchAgent();
if (!only || only === 'tool-search') await benchToolSearch();
if (!only || only === 'vault') await benchVault();
if (!only || only === 'audit-search') await benchAuditSearch();
if (!only || only === 'whatsapp') await benchWhatsapp();
if (!only || only === 'sandbox') await benchSandbox();
if (!only || only === 'heavy') await benchHeavy();
if (!only || only === 'scale') await benchScale();
