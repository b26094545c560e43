/**
 * The linked device's credentials and Signal keys: one JSON file per key in `<pack data>/auth`
 * (0700), each file 0600 and written atomically, in the pack's data folder, which no tool can
 * reach (the kernel refuses every path into its data folder). Baileys' own useMultiFileAuthState
 * writes with the process umask and without a rename, so a crash mid-write could leave a broken key.
 * Nothing here is ever logged: not the keys, not the file names' contents.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { writeFileAtomicAsync } from 'memo-kernel/pack';
import type { AuthenticationCreds, AuthenticationState, SignalDataSet, SignalDataTypeMap } from 'baileys';

type Baileys = typeof import('baileys');

export interface AuthStore {
  state: AuthenticationState;
  saveCreds(): Promise<void>;
}

const CREDS = 'creds.json';

/** A key's file name: `/` and `:` (in JIDs and ids) are not file-name safe. */
const fileOf = (name: string) => name.replace(/\//g, '__').replace(/:/g, '-');

export function authDir(dataDir: string): string {
  return path.join(dataDir, 'auth');
}

/**
 * True when a phone has paired with this device: Baileys records the account's signed device
 * identity (`account`) only on pair-success. A pairing-code request alone sets `me` but not `account`.
 */
export function isLinked(dataDir: string): boolean {
  try {
    const creds = JSON.parse(fs.readFileSync(path.join(authDir(dataDir), CREDS), 'utf8')) as { me?: { id?: string }; account?: unknown };
    return !!creds.me?.id && !!creds.account;
  } catch {
    return false;
  }
}

/** The linked account's own JIDs as the credentials record them (no key material). */
export function linkedAccount(dataDir: string): { id: string; lid?: string; name?: string } | null {
  try {
    const creds = JSON.parse(fs.readFileSync(path.join(authDir(dataDir), CREDS), 'utf8')) as { me?: { id?: string; lid?: string; name?: string } };
    return creds.me?.id ? { id: creds.me.id, ...(creds.me.lid ? { lid: creds.me.lid } : {}), ...(creds.me.name ? { name: creds.me.name } : {}) } : null;
  } catch {
    return null;
  }
}

/** Forgets the linked device here (the credentials and every key). */
export function removeAuth(dataDir: string): void {
  fs.rmSync(authDir(dataDir), { recursive: true, force: true });
}

export async function openAuthStore(dataDir: string, baileys: Pick<Baileys, 'BufferJSON' | 'initAuthCreds' | 'proto'>): Promise<AuthStore> {
  const dir = authDir(dataDir);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.chmodSync(dir, 0o700);
  // One write at a time per file: Baileys sets the same key from overlapping tasks.
  const queues = new Map<string, Promise<unknown>>();
  const serial = <T>(file: string, work: () => Promise<T>): Promise<T> => {
    const next = (queues.get(file) ?? Promise.resolve()).then(work, work);
    const settled = next.catch(() => undefined);
    queues.set(file, settled);
    void settled.then(() => {
      if (queues.get(file) === settled) queues.delete(file);
    });
    return next;
  };
  const write = (name: string, value: unknown) =>
    serial(name, () => writeFileAtomicAsync(path.join(dir, fileOf(name)), JSON.stringify(value, baileys.BufferJSON.replacer), { mode: 0o600 }));
  const read = (name: string) =>
    serial(name, async () => {
      try {
        return JSON.parse(await fs.promises.readFile(path.join(dir, fileOf(name)), 'utf8'), baileys.BufferJSON.reviver) as unknown;
      } catch {
        return null;
      }
    });
  const remove = (name: string) => serial(name, () => fs.promises.rm(path.join(dir, fileOf(name)), { force: true }));

  const creds = ((await read(CREDS)) as AuthenticationCreds | null) ?? baileys.initAuthCreds();
  return {
    state: {
      creds,
      keys: {
        get: async <T extends keyof SignalDataTypeMap>(type: T, ids: string[]) => {
          const out: { [id: string]: SignalDataTypeMap[T] } = {};
          await Promise.all(
            ids.map(async (id) => {
              let value = await read(`${type}-${id}.json`);
              if (type === 'app-state-sync-key' && value) value = baileys.proto.Message.AppStateSyncKeyData.fromObject(value);
              if (value !== null) out[id] = value as SignalDataTypeMap[T];
            }),
          );
          return out;
        },
        set: async (data: SignalDataSet) => {
          const tasks: Array<Promise<unknown>> = [];
          for (const category of Object.keys(data) as Array<keyof SignalDataSet>) {
            for (const [id, value] of Object.entries(data[category] ?? {})) {
              const name = `${category}-${id}.json`;
              tasks.push(value ? write(name, value) : remove(name));
            }
          }
          await Promise.all(tasks);
        },
      },
    },
    saveCreds: () => write(CREDS, creds),
  };
}
