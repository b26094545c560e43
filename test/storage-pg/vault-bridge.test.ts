/**
 * The vault's inbox, journal and desktop-bridge suites with the planning database in PostgreSQL
 * (schema pack_vault__vault_planning), as they are: they also run on SQLite in test/plugins/vault.
 * The planning suites and the two-instance tests are in vault-planning.test.ts.
 */
import { onPostgres } from './on-postgres.js';
import '../plugins/vault/inbox.test.js';
import '../plugins/vault/journal.test.js';
import '../plugins/vault/bridge-projects.test.js';
import '../plugins/vault/bridge-inbox.test.js';
import '../plugins/vault/bridge-tags-settings.test.js';
import '../plugins/vault/bridge-notes.test.js';
import '../plugins/vault/bridge-calendar.test.js';
import '../plugins/vault/bridge-organize.test.js';
import '../plugins/vault/reminders.test.js';

onPostgres(['pack_vault__vault_planning']);
