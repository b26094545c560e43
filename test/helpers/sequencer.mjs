/**
 * Jest's own order (files that failed last time first, then the longest), with one addition: a file
 * jest has no timing for (a fresh clone, CI) takes its time from test/durations.json, measured on a
 * whole run (scripts/test-durations.mjs), instead of being ordered by its size. By size, the short
 * files that rerun whole pack suites on PostgreSQL came last and one worker ran them alone at the end.
 * Files in neither (new ones) keep jest's rule for them: they run first.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import TestSequencer from '@jest/test-sequencer';

const root = new URL('../..', import.meta.url).pathname;
const measured = JSON.parse(readFileSync(new URL('../durations.json', import.meta.url), 'utf8'));

export default class LongestFirst extends TestSequencer {
  time(test) {
    return super.time(test) ?? measured[relative(root, test.path)];
  }
}
