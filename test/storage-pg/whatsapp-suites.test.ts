/**
 * The WhatsApp pack's own suites (linking, history sync, search, sending, the console's link panel),
 * run with the history in PostgreSQL (schema pack_whatsapp__whatsapp: tsvector search instead of
 * FTS5) instead of whatsapp.sqlite; they also run on SQLite in test/plugins/whatsapp, with the same
 * expectations, so every read and search tool answers alike on both.
 */
import { onPostgres } from './on-postgres.js';
import '../plugins/whatsapp/link.test.js';
import '../plugins/whatsapp/history.test.js';
import '../plugins/whatsapp/search.test.js';
import '../plugins/whatsapp/send.test.js';
import '../plugins/whatsapp/console-link.test.js';

onPostgres(['pack_whatsapp__whatsapp']);
