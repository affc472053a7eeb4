'use strict';
// One inbox card: what the request is, why it needs a person, what each decision does. Pure
// rendering (every request field goes through `textContent` via SG.el/SG.vis); the inbox
// (inbox.js) wires the buttons, selection and keys.
//
// Nothing is approved unseen: while any part of what runs is cut (long shell text, argv past
// the 40th token, a write's content past its first 2,048 characters), both Allow buttons are
// `disabled` until that part is opened, or the person ticks "Approve without reading all".
// inbox.js acts on `a`/`A` only when the button is enabled.
SG.card = (() => {
  const { el, vis } = SG;

  function stateLabel(s) {
    return { pending: 'PENDING', approved: 'APPROVED', denied: 'DENIED', expired: 'EXPIRED',
      'resolved-elsewhere': 'RESOLVED ELSEWHERE' }[s] || String(s).toUpperCase();
  }

  function field(label, value, opts) {
    const v = value === null || value === undefined || value === '' ? '—' : value;
    return [el('dt', {}, label), el('dd', opts || {}, typeof v === 'string' ? vis(v) : v)];
  }

  // Past these, a card shows the start (and a write's end) and an expander with the rest.
  const LONG_TEXT = 2000;
  const LONG_ARGV = 40;
  const HEAD_CHARS = 2048;
  const TAIL_CHARS = 1024;
  const num = (n) => Number(n).toLocaleString('en-US');
  const bytesOf = (s) => new TextEncoder().encode(s).length;

  // Text line by line (a newline is a line break, not a hidden character); `diff` colours
  // added and removed lines by class (their `+`/`-` stays: meaning never rests on colour).
  function lines(text, attrs, diff) {
    const pre = el('pre', attrs);
    String(text).split('\n').forEach((line, i) => {
      if (i) pre.appendChild(document.createTextNode('\n'));
      const cls = !diff ? null : line.startsWith('@@') ? 'hunk' :
        line.startsWith('+') && !line.startsWith('+++') ? 'add' :
        line.startsWith('-') && !line.startsWith('---') ? 'del' :
        line.startsWith('*** ') ? 'hunk' : null;
      pre.appendChild(cls ? el('span', { class: 'diff-' + cls }, vis(line)) : vis(line));
    });
    return pre;
  }

  // An expander whose opening counts as having seen what it holds.
  function gated(gates, what, summary, body, cls) {
    const d = el('details', { class: cls, 'data-gate': what }, el('summary', {}, summary), body);
    gates.push({ what, seen: () => d.open });
    return d;
  }

  function execBlock(a, box, gates) {
    if (a.command) {
      box.appendChild(el('div', { class: 'label' }, 'Shell text'));
      const text = String(a.command);
      const pre = (t) => el('pre', { class: 'cmd', 'data-field': 'command' }, vis(t));
      if (text.length > LONG_TEXT) {
        box.appendChild(pre(text.slice(0, LONG_TEXT) + '…'));
        box.appendChild(gated(gates, 'the whole shell text', 'Show all ' + num(text.length) + ' characters (required before Allow)',
          pre(text), 'more-text'));
      } else {
        box.appendChild(pre(text));
      }
    }
    const tokens = a.argv || [];
    const argvList = (from, to) => {
      const ol = el('ol', { class: 'argv', 'data-field': 'argv', 'aria-label': 'argv tokens', start: String(from) });
      tokens.slice(from, to).forEach((t, i) => ol.appendChild(
        el('li', {}, el('span', { class: 'idx' }, String(from + i)), el('code', {}, vis(t)))));
      return ol;
    };
    if (tokens.length) {
      box.appendChild(el('div', { class: 'label argv-label' }, 'argv (' + tokens.length + ' tokens)'));
      box.appendChild(argvList(0, LONG_ARGV));
      if (tokens.length > LONG_ARGV) {
        box.appendChild(gated(gates, 'argv tokens ' + LONG_ARGV + '–' + (tokens.length - 1),
          (tokens.length - LONG_ARGV) + ' more tokens (required before Allow)', argvList(LONG_ARGV, tokens.length), 'more-argv'));
      }
    }
  }

  // A write's content: whole when it is short; else its start and end with the cut marked
  // and the full view one click away; when the middle never reached the guard, only the
  // explicit "approve without reading all" lets Allow through.
  function contentBlock(a, box, gates) {
    const total = Number(a.content_bytes ?? 0);
    const attrs = { class: 'cmd content', 'data-field': 'preview' };
    if (typeof a.content === 'string') {
      const cps = Array.from(a.content);
      if (cps.length <= HEAD_CHARS + TAIL_CHARS) {
        box.appendChild(el('div', { class: 'label' }, 'Content (all ' + num(total) + ' bytes)'));
        box.appendChild(lines(a.content, attrs));
        return;
      }
      const head = cps.slice(0, HEAD_CHARS).join('');
      const tail = cps.slice(cps.length - TAIL_CHARS).join('');
      const cut = total - bytesOf(head) - bytesOf(tail);
      box.appendChild(el('div', { class: 'label', 'data-field': 'shown' },
        'Content: showing ' + num(bytesOf(head)) + ' of ' + num(total) + ' bytes (start), then the last ' + num(bytesOf(tail))));
      box.appendChild(lines(head, attrs));
      box.appendChild(el('p', { class: 'cut', 'data-field': 'cut' }, '✂ ' + num(cut) + ' bytes cut here — open the full content below'));
      box.appendChild(lines(tail, { class: 'cmd content', 'data-field': 'tail' }));
      box.appendChild(gated(gates, 'the full content', 'Full content (' + num(total) + ' bytes; required before Allow)',
        lines(a.content, { class: 'cmd content', 'data-field': 'content' }), 'full-content'));
      return;
    }
    const head = String(a.preview);
    const tail = typeof a.tail === 'string' ? a.tail : '';
    const missing = total - bytesOf(head) - bytesOf(tail);
    box.appendChild(el('div', { class: 'label', 'data-field': 'shown' },
      'Content: showing ' + num(bytesOf(head)) + ' of ' + num(total) + ' bytes (start)' + (tail ? ' and the last ' + num(bytesOf(tail)) : '')));
    box.appendChild(lines(head, attrs));
    if (missing > 0) {
      box.appendChild(el('p', { class: 'cut', 'data-field': 'cut' },
        '✂ ' + num(missing) + ' bytes never reached the guard (too large to send); nobody can read them here'));
      gates.push({ what: 'the ' + num(missing) + ' bytes that never reached the guard', seen: () => false });
    }
    if (tail) box.appendChild(lines(tail, { class: 'cmd content', 'data-field': 'tail' }));
  }

  function whatBlock(a, gates) {
    const box = el('div', { class: 'what' });
    if (a.kind === 'exec') {
      execBlock(a, box, gates);
      return box;
    }
    // A tool call's content (a write's, an edit's or a patch's text) is shown as text, line
    // by line, with hidden characters marked and a change's lines coloured.
    if (typeof a.content === 'string' || typeof a.preview === 'string') contentBlock(a, box, gates);
    if (typeof a.patch === 'string') {
      box.appendChild(el('div', { class: 'label' }, 'Change'));
      box.appendChild(lines(a.patch, { class: 'cmd diff', 'data-field': 'patch' }, true));
    }
    const hide = new Set(['kind', 'preview', 'patch', 'content', 'tail']);
    const dl = el('dl', { class: 'kv' });
    for (const [k, v] of Object.entries(a).filter(([k]) => !hide.has(k))) {
      const text = Array.isArray(v) ? v.join(' ') : (v === null ? '' : String(v));
      dl.append(...field(k, text, { class: 'mono' }));
    }
    box.appendChild(dl);
    return box;
  }

  // One environment value: its text with only the secret-looking parts hidden (length
  // shown) or, where the command reads it and the part could be code, marked.
  function envValue(v) {
    const dd = el('span', { class: 'env-value' });
    const parts = Array.isArray(v.parts) ? v.parts : (typeof v.value === 'string' ? [{ text: v.value }] : []);
    for (const p of parts) {
      if (typeof p.text !== 'string') dd.appendChild(el('span', { class: 'secret hidden' }, '⟦secret: ' + num(p.len) + ' bytes hidden⟧'));
      else if (p.secret) dd.appendChild(el('mark', { class: 'secret', title: 'looks like a secret' }, vis(p.text)));
      else dd.appendChild(vis(p.text));
    }
    if (!parts.length) dd.appendChild(document.createTextNode('(empty)'));
    if (v.expanded) dd.appendChild(el('span', { class: 'env-note' }, '  [the command reads it]'));
    if (v.dropped) dd.appendChild(el('span', { class: 'env-note dropped' }, '  [dropped: never reaches the run]'));
    return dd;
  }

  // Who runs it once approved, how confined, and by when the request must be answered.
  function runLine(e) {
    const r = e.runs || {};
    const deadline = r.deadlineMs || e.deadlineMs;
    const unconfined = r.confined !== true;
    return el('p', { class: 'run-line' + (unconfined ? ' unconfined' : ''), 'data-field': 'runs', 'data-by': r.by || 'unknown' },
      el('strong', {}, unconfined ? '⚠ Unconfined: ' : 'Runs confined: '),
      vis(r.text || 'unknown: the guard did not say who runs it'),
      ' · answer by ' + SG.time(deadline));
  }

  // What allow-always stores: the exact entries the guard will write, and what they mean.
  function grantsBlock(e) {
    const g = e.grants;
    if (!g) return null;
    const entries = g.entries || [];
    const ul = el('ul', { class: 'grants' });
    // A long argv (the same words the command block shows, behind its own gate) is cut here
    // with the whole of it one click away, so the list stays a list.
    const GRANT_ARGV = 120;
    for (const x of entries) {
      const argv = (x.argv || []).join(' ');
      const shown = argv.length > GRANT_ARGV ?
        [el('code', {}, vis(argv.slice(0, GRANT_ARGV) + '…')),
          el('details', { class: 'grant-argv' }, el('summary', {}, 'all ' + num((x.argv || []).length) + ' tokens'),
            el('code', {}, vis(argv)))] :
        [el('code', {}, vis(argv))];
      ul.appendChild(el('li', {}, el('code', {}, vis(x.pattern)), ' with argv ', ...shown,
        ' in ', el('code', {}, vis(x.cwd || '(any cwd: none named)'))));
    }
    return el('div', { class: 'grants-box', 'data-field': 'stores' },
      el('div', { class: 'label' }, 'Allow always stores' + (entries.length ? ' (' + entries.length + ')' : '') + ': ' + g.store),
      entries.length ? ul : null,
      el('p', { class: 'grants-means' }, vis(g.means || '')));
  }

  // A bounded grant with Allow once: the scope, N where it has one, and the exact pattern
  // the guard will store (the server computed it; nothing here widens it).
  function boundedBlock(e, what) {
    const b = e.bounded;
    const opts = (b && b.options) || [];
    if (!opts.length) return null;
    const scope = el('select', { class: 'grant-scope', 'aria-label': 'Grant scope' },
      ...opts.map((o) => el('option', { value: o.scope }, o.label)));
    const n = el('input', { class: 'grant-n', type: 'number', min: '1', 'aria-label': 'N (minutes or uses)' });
    const pattern = el('code', { class: 'grant-pattern', 'data-field': 'grant-pattern' });
    const where = el('span', { class: 'grant-where', 'data-field': 'grant-where' });
    const button = el('button', { class: 'allow-grant', type: 'button', 'data-act': 'allow-grant', 'data-grant': '{}',
      'aria-label': 'Allow once and grant: ' + what }, 'Allow + grant');
    const paint = () => {
      const o = opts.find((x) => x.scope === scope.value) || opts[0];
      n.hidden = !o.n;
      if (o.n) { n.max = String(o.n.max); if (!n.value) n.value = String(o.n.default); }
      // A long exact pattern is cut as the allow-always list cuts argv, the whole one click away.
      const full = (o.patterns || []).join(' ; ');
      pattern.replaceChildren(...(full.length > 120 ?
        [vis(full.slice(0, 120) + '…'), el('details', { class: 'grant-argv' },
          el('summary', {}, 'all ' + num(full.length) + ' characters'), el('code', {}, vis(full)))] :
        [vis(full)]));
      where.replaceChildren(vis(o.where || ''));
      const grant = { scope: o.scope };
      if (o.n) grant.n = Number(n.value);
      button.setAttribute('data-grant', JSON.stringify(grant));
    };
    scope.addEventListener('change', () => { n.value = ''; paint(); });
    n.addEventListener('input', paint);
    paint();
    // Closed, it is one line among the buttons: a grant is a deliberate choice.
    const node = el('details', { class: 'bounded', 'data-field': 'bounded' },
      el('summary', {}, 'Allow + grant…'),
      el('p', {}, scope, ' ', n, ' ', button),
      el('p', {}, 'Covers: ', pattern, ' · ', where));
    return { node, button };
  }

  // An egress request: the destination, what each allow lets through (the rule "always"
  // stores, shown before it is stored; how long "for a while" lasts), and what the agent
  // did just before it reached out.
  function egressBlock(e) {
    const g = e.egress;
    if (!g) return null;
    const dl = el('dl', { class: 'kv' });
    dl.append(...field('destination', g.target, { class: 'mono', 'data-field': 'egress-target' }));
    dl.append(...field(g.tunnel ? 'connection' : 'request',
      g.tunnel ? 'CONNECT tunnel (its contents are not visible to the guard)' : g.method + ' ' + (g.path || '/'),
      { class: 'mono', 'data-field': 'egress-request' }));
    dl.append(...field('Allow always stores', g.rule, { class: 'mono', 'data-field': 'egress-rule' }));
    dl.append(...field(g.grantLabel || 'Allow for', g.grant, { 'data-field': 'egress-grant' }));
    const recent = el('ol', { class: 'recent', 'data-field': 'egress-recent' });
    for (const r of g.recent || []) recent.appendChild(el('li', {}, SG.time(r.atMs) + ' ', el('code', {}, vis(r.what)), ' → ', vis(r.answer)));
    return el('div', { class: 'egress-box' }, dl,
      el('div', { class: 'label' }, 'What the agent did just before'),
      (g.recent || []).length ? recent : el('p', {}, 'Nothing on record before this request.'));
  }

  function build(e) {
    const a = e.action || {};
    const gates = [];
    // Over the values themselves: JSON text would spell a newline or ESC as plain `\n`.
    const special = (v) => typeof v === 'string' ? SG.hasSpecial(v) :
      (v && typeof v === 'object' ? Object.values(v).some(special) : false);
    const warn = special(a) ?
      el('p', { class: 'warn' }, '⚠ Hidden or control characters in this request are shown as ⟨…⟩ markers.') : null;
    // Words that read as something else (a Cyrillic `с` in `сurl`), named by the server.
    const lookalikes = e.confusables || [];
    const look = lookalikes.length ?
      el('ul', { class: 'warn confusables' }, ...lookalikes.map((t) => el('li', {}, '⚠ ', vis(t)))) : null;
    const reasons = el('ul', { class: 'reasons' });
    for (const r of e.reasons || []) reasons.appendChild(el('li', {}, el('code', {}, vis(r.code)), ' ', vis(r.message)));
    const reason = el('input', { class: 'reason', type: 'text', maxlength: '500',
      placeholder: 'Reason (optional; the agent sees it)', 'aria-label': 'Reason for denying' });
    const offered = e.offered || [];
    // Accessible names carry the command, so a screen reader says what each button decides.
    const what = SG.visText(e.summary).slice(0, 160);
    const once = el('button', { class: 'allow', type: 'button', 'data-act': 'allow-once', 'aria-label': 'Allow once: ' + what }, 'Allow once');
    const always = offered.includes('allow-always') ?
      el('button', { class: 'allow-always', type: 'button', 'data-act': 'allow-always', 'aria-label': 'Allow always: ' + what }, 'Allow always') : null;
    const forLabel = (e.egress && e.egress.grantLabel) || 'Allow for a while';
    const allowFor = offered.includes('allow-for') ?
      el('button', { class: 'allow-for', type: 'button', 'data-act': 'allow-for', 'aria-label': forLabel + ': ' + what }, forLabel) : null;
    const deny = el('button', { class: 'deny', type: 'button', 'data-act': 'deny', 'aria-label': 'Deny: ' + what }, 'Deny');
    const bounded = boundedBlock(e, what);
    const status = el('p', { class: 'card-status', role: 'status' });
    const approvals = el('p', { class: 'approvals', 'data-field': 'approvals', role: 'status' }, SG.approvalsText(e));
    const countdown = el('span', { class: 'countdown' });
    const dl = el('dl', { class: 'kv' });
    if (a.kind === 'exec') {
      dl.append(...field('cwd', a.cwd, { class: 'mono' }));
      dl.append(...field('program', a.resolved_path || [...new Set(e.programs || [])].join(' · '), { class: 'mono' }));
      dl.append(...field('env keys', (a.env_keys || []).join(' '), { class: 'mono' }));
      // The values the run gets (bound by the request hash); only secret parts hidden.
      for (const v of a.env || []) dl.append(...field('env ' + v.name, envValue(v), { class: 'mono', 'data-env': v.name }));
    }
    dl.append(...field('asked at', SG.time(e.createdMs), { 'data-field': 'asked' }));
    dl.append(...field('request hash', e.requestHash, { class: 'mono hash', 'data-field': 'hash' }));
    // The inbox id: the one `inbox approve`, serve's log line and /api/requests/<id> use.
    dl.append(...field('id', e.id, { class: 'mono', 'data-field': 'id' }));
    const pick = el('input', { type: 'checkbox', class: 'pick', 'aria-label': 'Select for bulk deny: ' + what });
    const body = whatBlock(a, gates);
    // Allow waits for every cut part to be opened, or for this explicit box.
    const unread = el('p', { class: 'unread', 'data-field': 'unread' });
    const skip = el('input', { type: 'checkbox', class: 'skip-reading', 'aria-label': 'Approve without reading all: ' + what });
    const skipRow = gates.length ? el('label', { class: 'skip-row' }, skip, ' Approve without reading all') : null;
    const node = el('li', { class: 'card pending', id: 'r-' + e.id, tabindex: '0', 'data-id': e.id },
      el('div', { class: 'card-head' },
        pick,
        el('span', { class: 'badge state' }, stateLabel(e.state)),
        el('span', { class: 'badge cat' }, vis(e.category)),
        el('span', { class: 'src' }, vis(e.source + ' · agent ' + e.agentId + (e.sessionKey ? ' · ' + e.sessionKey : ''))),
        countdown),
      el('h2', {}, SG.actionTitle(a)),
      warn,
      look,
      body,
      egressBlock(e),
      el('div', { class: 'label why' }, 'Why it needs you'),
      reasons,
      dl,
      grantsBlock(e),
      runLine(e),
      gates.length ? unread : null,
      skipRow,
      approvals,
      SG.state.canDecide ?
        el('div', { class: 'actions' }, once, allowFor, always, bounded && bounded.node, el('div', { class: 'deny-group' }, reason, deny)) :
        el('p', { class: 'viewer-note', 'data-field': 'viewer' }, 'Your role is viewer: you see requests but cannot decide them.'),
      status);
    const unseen = () => skip.checked ? [] : gates.filter((g) => !g.seen()).map((g) => g.what);
    // The inbox disables everything once a card is decided; nothing here re-enables it then.
    const refresh = () => {
      if (node.classList.contains('done')) return;
      const left = unseen();
      for (const b of [once, allowFor, always, bounded && bounded.button]) if (b) b.disabled = left.length > 0 || !SG.state.canDecide;
      deny.disabled = !SG.state.canDecide;
      unread.textContent = left.length ? 'Allow is off until you open: ' + left.join('; ') + '.' : 'Everything that runs has been shown.';
    };
    node.addEventListener('toggle', refresh, true);
    skip.addEventListener('change', refresh);
    refresh();
    return { entry: e, node, done: false, countdown, status, approvals, reason, pick, buttons: { once, allowFor, always, deny }, unseen };
  }

  return { build, stateLabel };
})();
