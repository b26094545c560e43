/**
 * Tool search: recall and tokens, with every built-in pack loaded (about 100 tools).
 *
 * - Recall: 60 requests in a person's words, each with the tool that serves it (written without
 *   looking at the packs' keywords). Memo's tool search (name, description, pack, arguments, the
 *   packs' keywords and examples, stemming) against the baseline of a plain BM25 over name and
 *   description only (what a generic regex/BM25 tool search over the definitions sees). recall@5:
 *   the tool is among the first five; in-set: it is in the set a turn sends a 16K model.
 * - Tokens: the definitions a turn sends a 16K-window model for each request, against sending all.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import MiniSearch from 'minisearch';
import { createKernel, type ModelProvider } from '../kernel/index.js';
import { TokenCounter } from '../kernel/agent/context-budget.js';
import { definitionOf, planTools } from '../kernel/agent/tool-budget.js';
import { chooseProfile, profileTools } from '../kernel/mcp/mcp-profile.js';
import { toMcpTool } from '../kernel/mcp/mcp-tool-mapping.js';

const PLUGINS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../plugins');

/** [request, the tool that serves it]. */
const REQUESTS: Array<[string, string]> = [
  ["what's on my schedule for friday", 'get_calendar_events'],
  ['book a dentist appointment next tuesday at 3pm', 'create_calendar_event'],
  ['move my 1:1 with Sam to thursday', 'update_calendar_event'],
  ['cancel the team lunch on my calendar', 'delete_calendar_event'],
  ['which calendars do I have', 'list_calendars'],
  ['remind me to buy milk', 'vault_create_task'],
  ['mark the invoice todo as done', 'vault_complete_task'],
  ['what do I still have to do this week', 'vault_list_tasks'],
  ['start a new project for the kitchen renovation', 'vault_create_project'],
  ['archive the old website project', 'vault_archive_project'],
  ['show me my projects', 'vault_list_projects'],
  ['turn this task into a subtask of the launch task', 'vault_convert_task_to_subtask'],
  ['move the task to the marketing project', 'vault_move_task'],
  ['duplicate the weekly report task', 'vault_duplicate_task'],
  ['write in my journal that today was good', 'vault_create_journal_entry'],
  ['what did I write in my diary yesterday', 'vault_get_journal_entry'],
  ['jot down an idea for later: solar panels', 'vault_add_to_inbox'],
  ['what is waiting in my inbox', 'vault_list_inbox_items'],
  ['snooze that inbox item until monday', 'vault_snooze_inbox_item'],
  ['find my notes about kubernetes', 'vault_search_notes'],
  ['open the note called meeting notes', 'vault_read_note'],
  ['make a new note with the recipe', 'vault_create_note'],
  ['rename the note draft to final', 'vault_rename_note'],
  ['delete the note about the old car', 'vault_delete_note'],
  ['tag the note with #work', 'vault_add_tag'],
  ['which tags do I use', 'vault_get_tags'],
  ['what folders are in my vault', 'vault_list_folder'],
  ['create a folder for travel', 'vault_create_folder'],
  ['what note am I looking at right now', 'vault_get_current_note'],
  ['rebuild the search index of my notes', 'vault_reindex'],
  ['draw a flowchart of the signup process', 'vault_draw_on_canvas'],
  ['which whiteboards do I have', 'vault_list_canvases'],
  ['make a new canvas for brainstorming', 'vault_create_canvas'],
  ['export the canvas as an image', 'vault_render_canvas'],
  ['text mom that I will be late', 'whatsapp_send'],
  ['what did Anna say on whatsapp', 'whatsapp_messages'],
  ['search my chats for the wifi password', 'whatsapp_search'],
  ['show the newest whatsapp messages', 'whatsapp_latest'],
  ['look up the weather in Berlin online', 'web_search'],
  ['search the internet for node 20 release notes', 'web_search'],
  ['run the unit tests', 'run_command'],
  ['what is the value of the PATH variable', 'read_env'],
  ['show me the contents of package.json', 'read_file'],
  ['save this text to notes.txt', 'write_file'],
  ['replace foo with bar in config.ts', 'edit_file'],
  ['list the files in src', 'list_directory'],
  ['find every file that mentions TODO', 'search_files'],
  ['how big is the log file', 'get_file_info'],
  ['remove the temp file', 'delete_file'],
  ['every morning at 8 summarize my inbox', 'create_routine'],
  ['which automations are scheduled', 'list_routines'],
  ['stop the daily digest routine', 'cancel_routine'],
  ['did the nightly routine run', 'routine_history'],
  ['run the weekly review routine now', 'run_routine_now'],
  ['use claude sonnet as the model', 'configure_provider'],
  ['which skills are installed', 'list_skills'],
  ['add a status column called blocked', 'vault_create_status'],
  ['reorder my projects', 'vault_reorder_projects'],
  ['put the task back to not done', 'vault_uncomplete_task'],
  ['remove the urgent tag from the inbox item', 'vault_remove_inbox_tag'],
];

const BASELINE_BOOST = { name: 2, description: 1 };

export async function benchToolSearch(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memo-bench-toolsearch-'));
  const kernel = createKernel({ root: dir, dataDir: path.join(dir, 'data'), logger: { info() {}, warn() {}, error() {} } });
  try {
    await kernel.loadPacks([{ dir: PLUGINS, source: 'builtin' }]);
    const tools = kernel.registry.list();
    const missing = REQUESTS.filter(([, t]) => !kernel.registry.has(t)).map(([, t]) => t);
    if (missing.length) throw new Error(`bench requests name tools that are not loaded: ${missing.join(', ')}`);

    const baseline = new MiniSearch<{ id: string; name: string; description: string }>({ fields: ['name', 'description'] });
    baseline.addAll(
      tools
        .filter((t) => t.spec.name !== 'find_tools')
        .map((t) => ({ id: t.spec.name, name: t.spec.name.replace(/_/g, ' '), description: t.spec.description })),
    );

    const provider: ModelProvider = { name: 'bench', kind: 'bench', chat: () => Promise.reject(new Error('no model')), contextWindow: () => 16_384 };
    const counter = new TokenCounter(provider, 'm');
    const allowed = tools.map((t) => definitionOf(t.spec));
    const rank = (message: string, among: string[], limit: number) => kernel.toolSearch.search(message, { among, limit }).map((h) => h.name);

    let oursAt5 = 0;
    let baseAt5 = 0;
    let inSet = 0;
    let oursRr = 0;
    let baseRr = 0;
    const sentTokens: number[] = [];
    let allTokens = 0;
    const misses: string[] = [];
    for (const [request, want] of REQUESTS) {
      const ours = kernel.toolSearch.search(request, { limit: 10, among: tools.map((t) => t.spec.name).filter((n) => n !== 'find_tools') }).map((h) => h.name);
      const base = baseline.search(request, { boost: BASELINE_BOOST, combineWith: 'OR' }).map((h) => String(h.id));
      if (ours.slice(0, 5).includes(want)) oursAt5++;
      else misses.push(`${request} -> ${want} (got ${ours.slice(0, 3).join(', ')})`);
      if (base.slice(0, 5).includes(want)) baseAt5++;
      oursRr += ours.includes(want) ? 1 / (ours.indexOf(want) + 1) : 0;
      baseRr += base.slice(0, 10).includes(want) ? 1 / (base.indexOf(want) + 1) : 0;
      const plan = planTools({ counter, allowed, window: 16_384, message: request, rank });
      if (plan.offered.includes(want)) inSet++;
      allTokens = plan.allTokens;
      sentTokens.push(counter.count(JSON.stringify(allowed.filter((d) => plan.offered.includes(d.name)))));
    }
    const n = REQUESTS.length;
    const pct = (x: number) => `${((100 * x) / n).toFixed(0)}%`;
    const meanSent = sentTokens.reduce((a, b) => a + b, 0) / n;
    console.log(`\ntool search (${tools.length} tools, ${n} requests in a person's words)`);
    console.log(
      `  recall@5      Memo ${pct(oursAt5)}   baseline BM25 over name+description ${pct(baseAt5)}   (${(oursAt5 / Math.max(1, baseAt5)).toFixed(2)}x)`,
    );
    console.log(`  MRR@10        Memo ${(oursRr / n).toFixed(2)}   baseline ${(baseRr / n).toFixed(2)}`);
    console.log(`  in the set a 16K model is sent: ${pct(inSet)} of requests (the rest through find_tools)`);
    console.log(
      `  tokens sent   ${Math.round(meanSent)} on average (max ${Math.max(...sentTokens)}) vs ${allTokens} for every definition: ${(allTokens / meanSent).toFixed(1)}x fewer`,
    );
    if (misses.length) console.log(`  missed at 5: ${misses.join('; ')}`);

    // What an MCP client is listed (tools/list as served: annotations, portable schemas), per profile,
    // against the baseline of every tool; tool search: find_tools, then find_tools and the 5 it found.
    const listed = (names: (t: (typeof tools)[number]) => boolean) => counter.count(JSON.stringify({ tools: tools.filter(names).map(toMcpTool) }));
    const everyTool = listed(() => true);
    console.log(`\nMCP tools/list per profile (tokens a client is sent; baseline: every tool, ${everyTool})`);
    for (const name of ['vault', 'files'] as const) {
      const profile = chooseProfile({ profile: name });
      const served = new Set(profileTools(profile, kernel.registry).map((t) => t.spec.name));
      const tokens = listed((t) => served.has(t.spec.name));
      console.log(
        `  --profile ${name.padEnd(6)} ${String(served.size).padStart(3)} tools  ${String(tokens).padStart(6)} tokens  ${(everyTool / tokens).toFixed(1)}x fewer`,
      );
    }
    const first = listed((t) => t.spec.name === 'find_tools');
    const afterFind = REQUESTS.map(([request]) => {
      const found = new Set(
        kernel.toolSearch.search(request, { limit: 5, among: tools.map((t) => t.spec.name).filter((n) => n !== 'find_tools') }).map((h) => h.name),
      );
      return listed((t) => t.spec.name === 'find_tools' || found.has(t.spec.name));
    });
    const meanAfter = afterFind.reduce((a, b) => a + b, 0) / n;
    console.log(
      `  --search          first list ${first} tokens (${(everyTool / first).toFixed(0)}x fewer); after one find, ${Math.round(meanAfter)} on average (${(everyTool / meanAfter).toFixed(1)}x fewer), the wanted tool among them in ${pct(oursAt5)} of requests`,
    );
  } finally {
    await kernel.shutdown();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
