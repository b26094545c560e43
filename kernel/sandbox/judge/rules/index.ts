/** Loads every rule file; each registers the programs it judges (see registry.ts). */
import './rm.js';
import './permissions.js';
import './disk.js';
import './network.js';
import './privilege.js';
import './system-control.js';
import './shells-and-builtins.js';
import './wrappers.js';
import './find.js';
import './interpreters.js';
import './text-tools.js';
import './files.js';
import './git.js';
import './programs.js';
import './memo.js';
import './schedule.js';
import './readers.js';
