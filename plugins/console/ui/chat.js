/* global document, window */
// Chat with the agent: conversations (history), a turn's tool steps live in the Agent Run box, a
// stop button, the provider/model picker and the web-search scope. Turns run in memo serve
// (the same loop and encrypted store as memo chat); their progress arrives as `chat` events.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import { api } from './api.js';
import { ApprovalCard } from './approval-card.js';
import { ArtifactFrame, ItemLink, Sources } from './items.js';
import { copyText, itemsOfSteps, renderMarkdown } from './markdown.js';
import { MentionList, PickedMentions, useMentionPicker } from './mentions.js';

const OUTCOMES = { running: 'running…', ok: 'ok', error: 'failed', denied: 'denied', expired: 'expired' };
const ENDINGS = {
  final: 'done',
  cancelled: 'stopped',
  error: 'failed',
  max_iterations: 'stopped after too many steps',
  permission_timeout: 'a permission question timed out',
  approval_expired: 'an approval expired',
};

function shortArgs(args) {
  const first = Object.values(args ?? {})[0];
  if (first === undefined) return '';
  const text = typeof first === 'string' ? first : JSON.stringify(first);
  return text.length > 40 ? `${text.slice(0, 37)}…` : text;
}

function seconds(ms) {
  return ms === undefined ? '' : `${(ms / 1000).toFixed(2)} s`;
}

/** The HTML artifact a finished vault_add_html_artifact step saved: its note and file name, or null. */
function artifactOf(step) {
  if (step.tool !== 'vault_add_html_artifact' || (step.state ?? step.outcome) !== 'ok' || !step.raw?.result) return null;
  try {
    const r = JSON.parse(step.raw.result);
    const name = typeof r.attachment === 'string' ? r.attachment.split('/').pop() : null;
    return typeof r.id === 'string' && name ? { note: r.id, name } : null;
  } catch {
    return null;
  }
}

/**
 * A read's readable label (seed 003: "Reading note", "Reading tasks"), from the tool's name: search,
 * read, list and get tools of any pack; null for anything else (its tool name is shown).
 */
function readLabel(tool) {
  const m = /^(?:[a-z]+_)??(search|read|list|get)_(.+)$/.exec(tool);
  if (!m || /^(desktop|html)/.test(m[2])) return tool === 'vault_desktop_read' ? 'Reading the vault' : null;
  const what = m[2].replace(/_/g, ' ');
  return `${m[1] === 'search' ? 'Searching' : 'Reading'} ${what}`;
}

/** One step of the activity row: step number, tool (a read by its readable label), short arguments, duration, outcome; opens to the raw tool name, arguments and result. */
function Step({ n, step }) {
  const state = step.state ?? step.outcome;
  const label = readLabel(step.tool);
  return html`<li class=${`step ${state}${label ? ' read-step' : ''}`} data-tool=${step.tool} data-state=${state}>
    <details>
      <summary>
        <span class="step-n">${n}</span>
        ${label ? html`<span class="read-label">${label}</span>` : html`<code class="tool">${step.tool}</code>`}
        <span class="step-args">${shortArgs(step.args)}</span>
        ${step.edited && html`<span class="edited-mark">edited by ${step.edited.by}</span>`}
        <span class="step-time">${seconds(step.durationMs)}</span>
        <span class=${`outcome ${state}`}>${OUTCOMES[state] ?? state}${step.code ? ` (${step.code})` : ''}</span>
      </summary>
      ${label && html`<p class="step-tool">Tool: <code>${step.tool}</code></p>`} ${step.summary && html`<p class="step-summary">${step.summary}</p>`}
      ${artifactOf(step) && html`<${ArtifactFrame} ...${artifactOf(step)} />`}
      ${
        step.items?.length > 0 &&
        html`<ul class="step-items" aria-label="Items this step returned">
          ${step.items.map((i) => html`<li><${ItemLink} item=${i} chip=${false} /></li>`)}
        </ul>`
      }
      ${
        step.edited
          ? html`<h4>Arguments as run (edited by ${step.edited.by} before approving)</h4>
              <pre>${JSON.stringify(step.args, null, 2)}</pre>
              <h4>Arguments the agent asked for</h4>
              <pre>${JSON.stringify(step.raw?.args ?? step.edited.askedArgs, null, 2)}</pre>`
          : html`<h4>Arguments</h4>
              <pre>${JSON.stringify(step.raw?.args ?? step.args, null, 2)}</pre>`
      }
      ${
        step.raw
          ? html`<h4>Result${step.raw.truncated ? ' (first 16,000 characters)' : ''}</h4>
              <pre>${step.raw.result}</pre>`
          : state === 'running' && html`<p class="note">The result shows here when the step ends.</p>`
      }
    </details>
  </li>`;
}

/**
 * A turn's tool calls folded into one activity row (seed 003): while the turn runs it names the tool
 * running and counts the steps, with a spinner; once done it settles to a step count. Selecting it
 * opens the steps. A request waiting for the person opens the row by itself (its Allow and Deny are
 * inside) and the row folds back once it is answered, unless the person opened it.
 */
function ActivityRow({ steps, running, waiting = false, label, children }) {
  const [opened, setOpened] = useState(false);
  const shown = opened || waiting;
  const shownRef = useRef(shown);
  shownRef.current = shown;
  if (!steps.length && !waiting) return null;
  const current = steps.findLast((s) => (s.state ?? s.outcome) === 'running') ?? steps.at(-1);
  const notOk = steps.filter((s) => !['ok', 'running'].includes(s.state ?? s.outcome)).length;
  const count = `${steps.length} ${steps.length === 1 ? 'step' : 'steps'}`;
  const text = waiting
    ? `Waiting for your approval · ${count}`
    : running && current
      ? `Running ${current.tool} · ${count} so far`
      : `${count}${notOk ? ` · ${notOk} not ok` : ''}`;
  return html`<section class="activity" aria-label=${label} data-running=${running ? 'true' : 'false'}>
    <details
      open=${shown}
      onToggle=${(e) => {
        // Only the person's own toggles count: the row opening itself for a waiting request does not.
        if (e.currentTarget.open !== shownRef.current) setOpened(e.currentTarget.open);
      }}
    >
      <summary>
        ${running && html`<span class="spinner" aria-hidden="true"></span>`}
        <span class="activity-label">${text}</span>
      </summary>
      <ol class="steps">
        ${steps.map((s, i) => html`<${Step} key=${i} n=${i + 1} step=${s} />`)}
      </ol>
      ${children}
    </details>
  </section>`;
}

/** A reply's text as rendered markdown: item links the turn's tools returned are chips. */
function ReplyText({ text, items }) {
  return html`<div class="md" dangerouslySetInnerHTML=${{ __html: renderMarkdown(text, items) }}></div>`;
}

/** Under a finished reply: Copy (the markdown as written) and the sources the turn's tools returned. */
function ReplyActions({ markdown, items }) {
  const [copied, setCopied] = useState(/** @type {any} */ (null));
  const copy = async () => {
    const ok = await copyText(markdown);
    setCopied(ok ? 'Copied' : 'Copy failed');
    setTimeout(() => setCopied(null), 1500);
  };
  return html`<div class="reply-actions">
    <button type="button" class="quiet" onClick=${copy} aria-label="Copy the reply as markdown">${copied ?? 'Copy'}</button>
    <span class="sr-only" role="status">${copied ?? ''}</span>
    <${Sources} items=${[...items.values()]} />
  </div>`;
}

function Reasoning({ text }) {
  if (!text) return null;
  const words = text.split(/\s+/).filter(Boolean).length;
  return html`<details class="reasoning">
    <summary>Thought (${words} words)</summary>
    <p>${text}</p>
  </details>`;
}

/** Stored messages as exchanges: the person's message, the turn's steps (from the stored activity and tool results), the replies. */
function exchanges(messages, activity) {
  /** @type {Array<{ seq: number, user: string, replies: any[], results: any[], steps?: any[], items?: Map<string, any> }>} */
  const out = [];
  for (const m of messages) {
    if (m.role === 'user') out.push({ seq: m.seq, user: m.content, replies: [], results: [] });
    else if (!out.length) continue;
    else if (m.role === 'tool') out[out.length - 1].results.push(m.content);
    else if (m.role === 'assistant' && (m.content || m.reasoning)) out[out.length - 1].replies.push(m);
  }
  for (const x of out) {
    x.steps = activity
      .filter((a) => a.turnSeq === x.seq)
      .map((a, i) => ({
        ...a,
        state: a.outcome,
        // The raw arguments are the model's: for a step a person edited, what it asked for (`args` are those that ran).
        raw: x.results[i] === undefined ? undefined : { args: a.edited?.askedArgs ?? a.args, result: x.results[i], truncated: false },
      }));
    x.items = itemsOfSteps(x.steps);
  }
  return out;
}

function Exchange({ x }) {
  return html`<li class="exchange">
    <div class="msg user">
      <span class="who">You</span>
      <p>${x.user}</p>
    </div>
    <${ActivityRow} steps=${x.steps} running=${false} label="Steps of this turn" />
    ${x.replies.map(
      (r, i) =>
        html`<div class="msg assistant">
          <span class="who">Memo${r.model ? html` <span class="model">${r.provider}/${r.model}</span>` : ''}</span>
          <${Reasoning} text=${r.reasoning} />
          ${r.content && html`<${ReplyText} text=${r.content} items=${x.items} />`}
          ${r.content && i === x.replies.length - 1 && html`<${ReplyActions} markdown=${r.content} items=${x.items} />`}
        </div>`,
    )}
  </li>`;
}

/** The turn running now (or the one that just ended in this page): steps live, a link to the inbox while one waits, Stop. */
function LiveTurn({ turn, announce }) {
  const stop = async () => {
    try {
      await api(`/chat/turns/${encodeURIComponent(turn.id)}/stop`, { method: 'POST', body: {} });
      announce('Stopping the turn…');
    } catch (err) {
      announce(err.message);
    }
  };
  const running = turn.state === 'running';
  // The waiting requests' cards live inside the activity row, which opens itself while one waits.
  const waitingCards =
    turn.waiting.length > 0 &&
    html`<div class="waiting">
      <p role="status">
        Waiting for your approval: ${turn.waiting.map((w) => w.tool).join(', ')}. Answer it here, or in the <a href="#/">Approvals inbox</a> (one request: the
        first answer counts).
      </p>
      ${turn.waiting.map(
        (w) =>
          w.approval &&
          html`<${ApprovalCard}
            key=${`${w.id}:${w.approval.revision}`}
            approval=${{ ...w.approval, expiresInMs: Math.max(0, Date.parse(w.approval.expiresAt) - Date.now()), receivedAt: Date.now() }}
            pickable=${false}
            selected=${false}
            onSelect=${() => {}}
            onAnswering=${() => () => {}}
            announce=${announce}
            compact=${false}
            checked=${false}
            onCheck=${() => {}}
          />`,
      )}
    </div>`;
  return html`<section class=${`live-turn ${turn.state}`} aria-label="The current turn" aria-busy=${running} data-state=${turn.state}>
    ${
      running &&
      html`<div class="msg user">
        <span class="who">You</span>
        <p>${turn.message}</p>
      </div>`
    }
    ${
      (running || turn.waiting.length > 0) &&
      html`<${ActivityRow} steps=${turn.steps} running=${running} waiting=${turn.waiting.length > 0} label="Steps of the current turn"
        >${waitingCards}</${ActivityRow}
      >`
    }
    ${
      running &&
      turn.partial &&
      html`<div class="msg assistant streaming">
        <span class="who">Memo <span class="model">(writing…)</span></span>
        <${ReplyText} text=${turn.partial} items=${itemsOfSteps(turn.steps)} />
      </div>`
    }
    ${
      running
        ? html`<div class="turn-status">
            <span class="spinner" aria-hidden="true"></span><span>Working with ${turn.provider}/${turn.model}…</span>
            <button type="button" class="deny" onClick=${stop}>Stop</button>
          </div>`
        : turn.state !== 'final' &&
          html`<p class="turn-end" role="status">
            Turn ${ENDINGS[turn.state] ?? turn.state}${turn.error && turn.state !== 'cancelled' ? `: ${turn.error}` : '.'}
          </p>`
    }
    ${turn.notices.map((n) => html`<p class="note">${n}</p>`)}
  </section>`;
}

/**
 * Provider, model and access mode of the next turn: the configured providers, then the agent CLIs
 * (one not installed is listed, disabled, with why). A conversation reopened comes back with its own.
 */
function Picker({ options, choice, setChoice }) {
  const set = (k) => (e) => setChoice({ ...choice, [k]: e.currentTarget.value });
  const provider = options.providers.find((p) => p.name === choice.provider);
  const cli = options.clis.find((c) => c.name === choice.provider);
  const pickProvider = (e) => {
    const name = e.currentTarget.value;
    const isCli = options.clis.some((c) => c.name === name);
    // A CLI has no Web search only (it would be offered more than web_search): Vault only instead.
    setChoice({ ...choice, provider: name, model: '', mode: isCli && choice.mode === 'web' ? 'vault' : choice.mode });
  };
  return html`<div class="picker">
    <div class="field">
      <label for="chat-provider">Provider</label>
      <select id="chat-provider" value=${choice.provider} onChange=${pickProvider}>
        <optgroup label="Model providers">
          ${options.providers.map((p) => html`<option value=${p.name}>${p.name}${p.name === options.active ? ' (active)' : ''}</option>`)}
        </optgroup>
        <optgroup label="Agent CLIs">
          ${options.clis.map(
            (c) => html`<option value=${c.name} disabled=${!c.found}>${c.label}${c.found ? (c.version ? ` ${c.version}` : '') : ' — not detected'}</option>`,
          )}
        </optgroup>
      </select>
      ${
        options.clis.some((c) => !c.found) &&
        html`<details class="cli-status">
          <summary>Agent CLIs not detected (${options.clis.filter((c) => !c.found).length})</summary>
          <ul>
            ${options.clis.filter((c) => !c.found).map((c) => html`<li>${c.label}: ${c.reason}. Install it and sign in (claude login, codex login, or a first agy run).</li>`)}
          </ul>
        </details>`
      }
    </div>
    <div class="field">
      <label for="chat-model">Model</label>
      <input id="chat-model" value=${choice.model} placeholder=${cli ? "the CLI's default" : (provider?.model ?? 'model id')} onInput=${set('model')} />
    </div>
    <fieldset class="mode">
      <legend>Tools</legend>
      <label><input type="radio" name="chat-mode" value="agent" checked=${choice.mode === 'agent'} onChange=${set('mode')} /> Default access mode</label>
      <label><input type="radio" name="chat-mode" value="vault" checked=${choice.mode === 'vault'} onChange=${set('mode')} /> Vault only</label>
      <label
        ><input type="radio" name="chat-mode" value="computer" checked=${choice.mode === 'computer'} onChange=${set('mode')} /> Computer access (every enabled
        tool${cli ? `, and ${cli.label}'s own file, shell and web tools` : ''})</label
      >
      <label
        ><input
          type="radio"
          name="chat-mode"
          value="web"
          checked=${choice.mode === 'web'}
          onChange=${set('mode')}
          disabled=${!options.webSearch || Boolean(cli)}
        />
        Web search only</label
      >
    </fieldset>
  </div>`;
}

/** The picker's choice for a reopened conversation: its provider (or CLI), model and access mode, when they are still offered. */
function choiceOf(info, options, current) {
  // A conversation without a turn yet has nothing of its own: the choice the person is making stays.
  if (!info?.provider || !options || !info.messages) return current;
  const cli = options.clis.find((c) => c.provider === info.provider);
  const provider = cli ? cli.name : options.providers.some((p) => p.name === info.provider) ? info.provider : null;
  if (!provider) return { ...current, mode: info.mode ?? current.mode };
  return { provider, model: info.model && !cli ? info.model : cli ? (info.model ?? '') : '', mode: info.mode ?? 'agent' };
}

/** The conversation shown last in this page: opened again when the chat page comes back (from an item's view). */
let lastOpen = null;

export function ChatPage({ events, announce }) {
  const [options, setOptions] = useState(/** @type {any} */ (null));
  const optionsRef = useRef(/** @type {any} */ (null));
  optionsRef.current = options;
  const [list, setList] = useState(/** @type {any[]} */ ([]));
  const [current, setCurrent] = useState(/** @type {any} */ (null));
  const [transcript, setTranscript] = useState(/** @type {any} */ (null));
  const [turn, setTurn] = useState(/** @type {any} */ (null));
  const [text, setText] = useState('');
  const [choice, setChoice] = useState({ provider: '', model: '', mode: 'agent' });
  const [problem, setProblem] = useState('');
  const messageRef = useRef(/** @type {any} */ (null));
  const mentions = useMentionPicker(text, setText, announce);
  const currentRef = useRef(/** @type {any} */ (null));
  currentRef.current = current;
  // Turns whose end already arrived over the stream (it can beat the answer to the POST that started them).
  const ended = useRef(new Set());

  // Only the newest list answer is shown: an older one arriving late would bring back a deleted conversation.
  const listSeq = useRef(0);
  const loadList = () => {
    const seq = ++listSeq.current;
    return api('/chat/conversations').then(
      (l) => seq === listSeq.current && setList(l),
      (err) => announce(err.message),
    );
  };
  // Only the newest answer to `open` is shown: one asked for before a turn ended can arrive after the
  // answer asked for when it ended (they travel apart from the event stream) and would bring the turn back.
  const openSeq = useRef(0);
  /** Shows a conversation; `keepTurn` keeps the box of a turn that just ended in this page. */
  const open = async (id, keepTurn = false) => {
    const seq = ++openSeq.current;
    lastOpen = id;
    setCurrent(id);
    setProblem('');
    try {
      const t = await api(`/chat/conversations/${encodeURIComponent(id)}`);
      if (currentRef.current !== id || seq !== openSeq.current) return;
      setTranscript(t);
      // The conversation's own provider, model and access mode come back with it (not on the refresh after a turn).
      if (!keepTurn) setChoice((c) => choiceOf(t.info, optionsRef.current, c));
      // A turn whose end the stream already brought is over, whatever a slower answer says.
      const live = t.running && !ended.current.has(t.running.id) ? t.running : null;
      if (!keepTurn || live) setTurn(live);
    } catch (err) {
      setProblem(err.message);
    }
  };
  useEffect(() => {
    api('/chat/options').then(
      (o) => {
        setOptions(o);
        setChoice((c) => ({ ...c, provider: o.active ?? o.providers[0]?.name ?? '' }));
      },
      (err) => announce(err.message),
    );
    void loadList();
    // Back from an item a reply linked: the conversation it was in is open again.
    if (lastOpen) void open(lastOpen);
  }, []);
  useEffect(() => {
    if (!events) return undefined;
    const onChat = (e) => {
      const view = JSON.parse(e.data);
      if (view.conversationId !== currentRef.current) {
        if (view.state !== 'running') void loadList();
        return;
      }
      if (view.state === 'running') setTurn(view);
      else {
        ended.current.add(view.id);
        // The turn is stored now: the transcript shows its steps and replies; the box keeps how it ended.
        setTurn(view.state === 'final' && view.notices.length === 0 ? null : view);
        void open(view.conversationId, true);
        void loadList();
        announce(`Turn ended: ${ENDINGS[view.state] ?? view.state}.`);
      }
    };
    const onTitle = () => void loadList();
    events.addEventListener('chat', onChat);
    events.addEventListener('chat-title', onTitle);
    return () => {
      events.removeEventListener('chat', onChat);
      events.removeEventListener('chat-title', onTitle);
    };
  }, [events]);

  const newConversation = async () => {
    try {
      const c = await api('/chat/conversations', { method: 'POST', body: {} });
      await loadList();
      setTurn(null);
      await open(c.id);
      document.getElementById('chat-message')?.focus();
    } catch (err) {
      announce(err.message);
    }
  };
  const send = async (e) => {
    e.preventDefault();
    setProblem('');
    try {
      let id = current;
      if (!id) {
        id = (await api('/chat/conversations', { method: 'POST', body: {} })).id;
        setCurrent(id);
        currentRef.current = id;
        lastOpen = id;
        setTranscript({ info: { id, title: 'New conversation' }, messages: [], activity: [] });
      }
      const body = {
        message: text,
        mode: choice.mode,
        ...(choice.provider ? { provider: choice.provider } : {}),
        ...(choice.model ? { model: choice.model } : {}),
        mentions: mentions.mentionsIn(text),
      };
      const view = await api(`/chat/conversations/${encodeURIComponent(id)}/turns`, { method: 'POST', body });
      if (!ended.current.has(view.id)) setTurn((t) => (t?.id === view.id ? t : view));
      setText('');
      mentions.clear();
      // The Send button is disabled while the turn runs: keep the focus where the next message goes.
      document.getElementById('chat-message')?.focus();
      void loadList();
    } catch (err) {
      setProblem(err.message);
    }
  };
  const remove = async () => {
    if (!current || !window.confirm('Delete this conversation? Its messages are removed from this machine for good.')) return;
    try {
      await api(`/chat/conversations/${encodeURIComponent(current)}`, { method: 'DELETE', body: {} });
      setCurrent(null);
      lastOpen = null;
      setTranscript(null);
      setTurn(null);
      announce('Conversation deleted.');
      void loadList();
    } catch (err) {
      announce(err.message);
    }
  };
  const onKey = (e) => {
    // The mention picker's keys first (arrows, Enter or Tab to choose, Escape).
    if (!e.isComposing && mentions.onKeyDown(e)) return;
    // Enter sends, Shift+Enter is a new line.
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      e.currentTarget.form?.requestSubmit();
    }
  };

  const running = turn?.state === 'running';
  const xs = transcript ? exchanges(transcript.messages, transcript.activity) : [];
  return html`<section class="chat" aria-labelledby="chat-title">
    <div class="section-head">
      <h1 id="chat-title">Chat</h1>
      <button type="button" class="primary" onClick=${newConversation}>New conversation</button>
    </div>
    <div class="chat-layout">
      <nav class="conversations" aria-label="Conversations">
        <h2>History</h2>
        ${
          list.length === 0
            ? html`<p class="note">No conversations yet.</p>`
            : html`<ul>
                ${list.map(
                  // Keyed: a refreshed list that reorders keeps each button with its conversation (a click never lands on another).
                  (c) =>
                    html`<li key=${c.id}>
                      <button
                        type="button"
                        class="conv"
                        data-id=${c.id}
                        aria-current=${c.id === current ? 'true' : undefined}
                        onClick=${() => (setTurn(null), open(c.id))}
                      >
                        <span class="conv-title">${c.title || 'Untitled'}</span>
                        <span class="conv-meta">${new Date(c.updatedAt).toLocaleString()} · ${c.messages} msgs${c.running ? ' · running' : ''}</span>
                      </button>
                    </li>`,
                )}
              </ul>`
        }
      </nav>
      <div class="conversation">
        ${
          transcript &&
          html`<div class="conv-head">
            <h2>${transcript.info.title || 'New conversation'}</h2>
            <button type="button" class="deny" onClick=${remove} disabled=${running}>Delete</button>
          </div>`
        }
        ${!transcript && html`<p class="note">Pick a conversation, or write a message to start a new one.</p>`}
        <ol class="transcript" aria-label="Transcript">
          ${xs.map((x) => html`<${Exchange} key=${x.seq} x=${x} />`)}
        </ol>
        ${turn && html`<${LiveTurn} turn=${turn} announce=${announce} />`} ${problem && html`<p class="problem" role="alert">${problem}</p>`}
        ${
          options === null
            ? html`<p>Loading…</p>`
            : options.providers.length === 0
              ? html`<p class="problem">No provider is configured: add one on the <a href="#/providers">Providers</a> page.</p>`
              : html`<form class="composer" onSubmit=${send} aria-label="Write to the agent">
                  <${Picker} options=${options} choice=${choice} setChoice=${setChoice} />
                  <label for="chat-message">Message</label>
                  <div class="composer-input">
                    <textarea
                      id="chat-message"
                      ref=${messageRef}
                      rows="3"
                      value=${text}
                      aria-autocomplete="list"
                      aria-controls=${mentions.open ? 'mention-list' : undefined}
                      aria-activedescendant=${mentions.open && mentions.results.length > 0 ? `mention-${mentions.index}` : undefined}
                      aria-describedby="chat-hint"
                      onInput=${(e) => {
                        setText(e.currentTarget.value);
                        mentions.onCaret(e.currentTarget);
                      }}
                      onClick=${(e) => mentions.onCaret(e.currentTarget)}
                      onBlur=${() => mentions.close()}
                      onKeyDown=${onKey}
                    ></textarea>
                    <${MentionList} picker=${mentions} inputRef=${messageRef} />
                  </div>
                  <${PickedMentions} picker=${mentions} />
                  <div class="actions">
                    <button type="submit" class="primary" disabled=${running || !text.trim()}>Send</button>
                    <span class="hint" id="chat-hint"
                      >Enter sends, Shift+Enter makes a new line, @ mentions a note, task, journal entry, inbox item or event.</span
                    >
                  </div>
                </form>`
        }
      </div>
    </div>
  </section>`;
}
