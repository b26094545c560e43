// The documentation site: `npm run docs` builds it (scripts/docs.mjs), after generating the reference
// pages from the code (scripts/docs-reference.mjs) and the API pages from the public .d.ts (TypeDoc).
// Laid out by what a reader came to do (tutorials, how-to guides, reference, explanation).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { defineConfig, type DefaultTheme } from 'vitepress';

const apiSidebarFile = new URL('../reference/api/typedoc-sidebar.json', import.meta.url);
const apiItems: DefaultTheme.SidebarItem[] = existsSync(apiSidebarFile) ? JSON.parse(readFileSync(apiSidebarFile, 'utf8')) : [];
const toolsDir = new URL('../reference/tools/', import.meta.url);
const toolPages = existsSync(toolsDir)
  ? readdirSync(toolsDir)
      .filter((f) => f.endsWith('.md') && f !== 'index.md')
      .map((f) => f.slice(0, -3))
  : [];

export default defineConfig({
  title: 'Memo agent kernel',
  description: 'A plugin microkernel for AI agent tools: one permission gate, an audit trail, MCP.',
  lang: 'en',
  cleanUrls: false,
  // Every internal link must lead to a page: a dead one fails the build (scripts/docs.mjs then checks anchors too).
  ignoreDeadLinks: false,
  srcExclude: ['**/node_modules/**', 'package.json'],
  // The local search index of every page (the API pages included) is one chunk of about 1 MB.
  vite: { build: { chunkSizeWarningLimit: 2048 } },
  themeConfig: {
    search: { provider: 'local' },
    outline: { level: [2, 3] },
    nav: [
      { text: 'Tutorials', link: '/tutorials/first-pack' },
      { text: 'Guides', link: '/guides/install' },
      { text: 'Reference', link: '/reference/cli' },
      { text: 'Explanation', link: '/explanation/pipeline' },
    ],
    sidebar: [
      {
        text: 'Tutorials',
        items: [
          { text: 'Your first pack', link: '/tutorials/first-pack' },
          { text: 'Your first skill', link: '/tutorials/first-skill' },
          { text: 'Embed Memo in a TypeScript app', link: '/tutorials/embedding' },
          { text: "An administrator's first day", link: '/tutorials/admin-first-day' },
        ],
      },
      {
        text: 'How-to guides',
        items: [
          { text: 'Install and run', link: '/guides/install' },
          { text: 'Use the CLI', link: '/guides/cli' },
          { text: 'Configuration', link: '/guides/configuration' },
          { text: 'Connect an MCP client', link: '/guides/connect-mcp-client' },
          { text: 'Serve fewer tools', link: '/guides/tool-profiles' },
          { text: 'The web console', link: '/guides/web-console' },
          { text: 'Chat with the agent', link: '/guides/chat' },
          { text: 'Agent CLIs as backends', link: '/guides/agent-cli-backends' },
          { text: 'Write a pack', link: '/guides/write-a-pack' },
          { text: 'Test a pack', link: '/guides/test-a-pack' },
          { text: 'Write a skill', link: '/guides/write-a-skill' },
          { text: 'Install memo-kernel in a project', link: '/guides/install-package' },
          { text: 'PostgreSQL', link: '/guides/postgresql' },
          { text: 'Several instances', link: '/guides/several-instances' },
          { text: 'Develop Memo itself', link: '/guides/develop' },
        ],
      },
      {
        text: 'Built-in packs',
        collapsed: true,
        items: [
          { text: 'Overview', link: '/packs/' },
          { text: 'Vault', link: '/packs/vault' },
          { text: 'Calendar', link: '/packs/calendar' },
          { text: 'Routines', link: '/packs/routines' },
          { text: 'WhatsApp', link: '/packs/whatsapp' },
          { text: 'Canvas', link: '/packs/canvas' },
        ],
      },
      {
        text: 'Reference',
        items: [
          { text: 'CLI', link: '/reference/cli' },
          { text: 'plugin.json', link: '/reference/plugin-json' },
          { text: 'SKILL.md', link: '/reference/skill-md' },
          {
            text: 'Tools by pack',
            link: '/reference/tools/',
            collapsed: true,
            items: toolPages.map((id) => ({ text: id, link: `/reference/tools/${id}` })),
          },
          { text: 'Host API', link: '/reference/host-api' },
          { text: 'Glossary', link: '/reference/glossary' },
          { text: 'API (TypeDoc)', link: '/reference/api/', collapsed: true, items: apiItems },
          { text: 'Benchmarks', link: '/benchmarks' },
        ],
      },
      {
        text: 'Explanation',
        items: [
          { text: 'How a call is judged', link: '/explanation/pipeline' },
          { text: 'Security: the two walls', link: '/explanation/security' },
          { text: 'Approvals', link: '/explanation/approvals' },
          { text: 'The audit trail', link: '/explanation/audit' },
          { text: 'Tool sets', link: '/explanation/tool-sets' },
          { text: 'Several instances', link: '/explanation/instances' },
          { text: 'The kernel in layers', link: '/explanation/layers' },
        ],
      },
    ],
  },
});
