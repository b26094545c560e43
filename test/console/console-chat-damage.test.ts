/**
 * The web console on a damaged agent.sqlite: the chat's routes answer 503 with the message that names
 * the file and what to do (not a bare "Internal error"), and the console's other pages keep working.
 */
import * as path from 'node:path';
import { echoPack, makeKernel } from '../helpers/kernel-fixture.js';
import { damage } from '../helpers/sqlite-damage.js';
import { consoleFixture, post, raw, type ConsoleFixture } from './console-helpers.js';

describe('web console: a damaged conversations file', () => {
  let c: ConsoleFixture | undefined;
  afterEach(async () => c?.close());

  it('answers the chat routes 503 with the message naming the file, and serves its other pages', async () => {
    const before = makeKernel();
    await before.kernel.conversations.create({ title: 'kept' });
    await before.close();
    const file = path.join(before.dataDir, 'agent.sqlite');
    damage(file, 'garbage over its header');

    c = await consoleFixture({ packs: [echoPack()], dataDir: before.dataDir });
    const cookie = await c.login();
    for (const r of [
      await raw(`${c.origin}/ui/api/chat/conversations`, { headers: { Cookie: cookie } }),
      await post(c.origin, '/ui/api/chat/conversations', cookie, {}),
    ]) {
      expect(r.status).toBe(503);
      const body = JSON.parse(r.body);
      expect(body.error).toBe('CONVERSATIONS_DAMAGED');
      expect(body.message).toContain(`The conversations file ${file} is not a SQLite database`);
      expect(body.message).toContain('put agent.sqlite back from your own backup');
    }
    const packs = await raw(`${c.origin}/ui/api/packs`, { headers: { Cookie: cookie } });
    expect(packs.status).toBe(200);
  });
});
