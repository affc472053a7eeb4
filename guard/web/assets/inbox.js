'use strict';
(() => {
  const { el, vis, api } = SG;
  const cards = new Map(); // id -> {entry, node, done}
  const list = document.getElementById('cards');
  let selected = null;
  let es = null;

  function stateLabel(s) {
    return { pending: 'PENDING', approved: 'APPROVED', denied: 'DENIED', expired: 'EXPIRED',
      'resolved-elsewhere': 'RESOLVED ELSEWHERE' }[s] || String(s).toUpperCase();
  }

  function field(label, value, opts) {
    const v = value === null || value === undefined || value === '' ? '—' : value;
    return [el('dt', {}, label), el('dd', opts || {}, typeof v === 'string' ? vis(v) : v)];
  }

  // Past these, a card shows the start and an expander with the rest.
  const LONG_TEXT = 2000;
  const LONG_ARGV = 40;

  function whatBlock(a) {
    const box = el('div', { class: 'what' });
    if (a.kind === 'exec') {
      if (a.command) {
        box.appendChild(el('div', { class: 'label' }, 'Shell text'));
        const text = String(a.command);
        const pre = (t) => el('pre', { class: 'cmd', 'data-field': 'command' }, vis(t));
        // Long text is cut with its size named and the rest one click away (never hidden
        // silently: the full text is in the expander).
        if (text.length > LONG_TEXT) {
          box.appendChild(pre(text.slice(0, LONG_TEXT) + '…'));
          box.appendChild(el('details', { class: 'more-text' },
            el('summary', {}, 'Show all ' + text.length + ' characters'), pre(text)));
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
          box.appendChild(el('details', { class: 'more-argv' },
            el('summary', {}, (tokens.length - LONG_ARGV) + ' more tokens'), argvList(LONG_ARGV, tokens.length)));
        }
      }
    } else {
      // A tool call's content (a write's preview, an edit's or a patch's text) is shown as
      // text, line by line, with hidden characters marked.
      for (const k of ['preview', 'patch']) {
        if (typeof a[k] !== 'string') continue;
        box.appendChild(el('div', { class: 'label' }, k === 'preview' ? 'Content (start)' : 'Change'));
        const pre = el('pre', { class: 'cmd', 'data-field': k });
        a[k].split('\n').forEach((line, i) => { if (i) pre.appendChild(document.createTextNode('\n')); pre.appendChild(vis(line)); });
        box.appendChild(pre);
      }
      const rows = Object.entries(a).filter(([k]) => k !== 'kind' && k !== 'preview' && k !== 'patch');
      const dl = el('dl', { class: 'kv' });
      for (const [k, v] of rows) {
        const text = Array.isArray(v) ? v.join(' ') : (v === null ? '' : String(v));
        dl.append(...field(k, text, { class: 'mono' }));
      }
      box.appendChild(dl);
    }
    return box;
  }

  function card(e) {
    const a = e.action || {};
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
    const btnOnce = el('button', { class: 'allow', type: 'button', 'data-act': 'allow-once', 'aria-label': 'Allow once: ' + what }, 'Allow once');
    const btnAlways = offered.includes('allow-always') ?
      el('button', { class: 'allow-always', type: 'button', 'data-act': 'allow-always', 'aria-label': 'Allow always: ' + what }, 'Allow always') : null;
    const btnDeny = el('button', { class: 'deny', type: 'button', 'data-act': 'deny', 'aria-label': 'Deny: ' + what }, 'Deny');
    const status = el('p', { class: 'card-status', role: 'status' });
    const countdown = el('span', { class: 'countdown' });
    const dl = el('dl', { class: 'kv' });
    const exec = a.kind === 'exec';
    if (exec) {
      dl.append(...field('cwd', a.cwd, { class: 'mono' }));
      dl.append(...field('program', a.resolved_path || [...new Set(e.programs || [])].join(' · '), { class: 'mono' }));
      dl.append(...field('env keys', (a.env_keys || []).join(' '), { class: 'mono' }));
      // The values the run gets (bound by the request hash); secret-looking ones masked.
      for (const v of a.env || []) {
        const shown = typeof v.value === 'string' ? v.value :
          '(masked: ' + v.len + ' bytes, sha256 ' + String(v.sha256 || '').slice(0, 16) + '…)';
        dl.append(...field('env ' + v.name, shown + (v.dropped ? '  [dropped: the run does not get it]' : ''),
          { class: 'mono', 'data-env': v.name }));
      }
    }
    dl.append(...field('asked at', SG.time(e.createdMs), { 'data-field': 'asked' }));
    if (offered.includes('allow-always')) {
      dl.append(...field('allow always stores', 'a grant for this exact command' + (a.cwd ? ' in ' + a.cwd : '') +
        ' (OpenClaw allowlist); its later runs need nobody', { 'data-field': 'stores' }));
    }
    dl.append(...field('request hash', e.requestHash, { class: 'mono hash', 'data-field': 'hash' }));
    // The inbox id: the one `inbox approve`, serve's log line and /api/requests/<id> use.
    dl.append(...field('id', e.id, { class: 'mono', 'data-field': 'id' }));
    const pick = el('input', { type: 'checkbox', class: 'pick', 'aria-label': 'Select for bulk deny: ' + what });
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
      whatBlock(a),
      el('div', { class: 'label why' }, 'Why it needs you'),
      reasons,
      dl,
      el('div', { class: 'actions' }, btnOnce, btnAlways, el('div', { class: 'deny-group' }, reason, btnDeny)),
      status);
    const c = { entry: e, node, done: false, countdown, status, reason, pick };
    node.addEventListener('click', (ev) => {
      const act = ev.target && ev.target.getAttribute && ev.target.getAttribute('data-act');
      select(c);
      if (act) decide(c, act);
    });
    reason.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') { ev.preventDefault(); decide(c, 'deny'); }
      if (ev.key === 'Escape') reason.blur();
    });
    return c;
  }

  function finish(c, state, decision, note) {
    if (c.done) return;
    c.done = true;
    c.node.classList.remove('pending');
    c.node.classList.add('done', state);
    c.node.querySelector('.badge.state').textContent = stateLabel(state);
    c.countdown.textContent = '';
    for (const b of c.node.querySelectorAll('button, input')) b.disabled = true;
    let text = note || '';
    if (!text && decision) {
      text = stateLabel(state) + ' by ' + SG.decisionText(decision) + (decision.reason ? ' — ' + decision.reason : '');
      const stored = SG.storedText(decision, c.entry.action);
      if (stored) text += ' — ' + stored;
    }
    c.status.textContent = '';
    c.status.appendChild(vis(text));
    if (selected === c) {
      const next = [...list.children].map((n) => cards.get(n.getAttribute('data-id'))).find((o) => o && !o.done);
      select(next || null);
    }
    setTimeout(() => { c.node.remove(); cards.delete(c.entry.id); refreshCount(); }, 60000);
    refreshCount();
  }

  async function decide(c, kind) {
    if (c.done) return;
    const body = { decision: kind, hash: c.entry.requestHash };
    if (kind === 'deny' && c.reason.value.trim()) body.reason = c.reason.value.trim();
    c.status.textContent = 'Sending…';
    const r = await api('POST', '/api/requests/' + encodeURIComponent(c.entry.id) + '/decision', body);
    if (r.ok) {
      finish(c, r.data.state, r.data.decision);
    } else if (r.status === 409) {
      finish(c, 'stale', null, r.data.message || 'This request changed or was already answered; your decision was not applied.');
      c.node.querySelector('.badge.state').textContent = 'NOT APPLIED';
    } else {
      c.status.textContent = r.data.message || ('Error ' + r.status);
    }
  }

  function add(e) {
    if (cards.has(e.id)) return;
    const c = card(e);
    cards.set(e.id, c);
    // Oldest deadline first.
    const after = [...list.children].find((n) => {
      const o = cards.get(n.getAttribute('data-id'));
      return o && !o.done && o.entry.deadlineMs > e.deadlineMs;
    });
    list.insertBefore(c.node, after || null);
    tick();
    refreshCount();
    notify(e);
    if (!selected) select(c);
  }

  function select(c) {
    if (selected) selected.node.classList.remove('selected');
    selected = c;
    if (c) { c.node.classList.add('selected'); }
    // The legend names Allow always only where the selected request offers it.
    document.getElementById('key-always').hidden = !(c && (c.entry.offered || []).includes('allow-always'));
  }

  // Pending requests the last load counted but did not fetch (beyond the shown pages): the
  // badge and title count them too, so 10,000 pending never reads as 500.
  let beyond = 0;
  function refreshCount() {
    const n = [...cards.values()].filter((c) => !c.done).length + beyond;
    document.getElementById('pending-count').textContent = String(n);
    document.getElementById('empty').hidden = cards.size > 0;
    document.title = (n ? '(' + n + ') ' : '') + 'Inbox · sanctum-guard';
  }

  function tick() {
    const now = SG.now();
    for (const c of cards.values()) {
      if (c.done) continue;
      const left = Math.ceil((c.entry.deadlineMs - now) / 1000);
      if (left > 0) {
        c.countdown.textContent = left + ' s left';
        c.node.classList.toggle('urgent', left <= 5);
      } else {
        c.countdown.textContent = 'deadline passed';
      }
    }
  }

  function notify(e) {
    if (!('Notification' in window) || Notification.permission !== 'granted') return;
    try { new Notification('sanctum-guard: approval needed', { body: SG.visText(e.summary), tag: e.id }); } catch (_) { /* ignore */ }
  }

  // Pending requests are read a page at a time (oldest deadline first); `total` says how many
  // there are, so the page never takes the first page for all of them.
  const PAGE = 500;
  let shown = PAGE;
  async function load() {
    const r = await api('GET', '/api/requests?state=pending&limit=' + shown);
    if (!r.ok) return;
    SG.setServerNow(r.data.nowMs);
    const complete = r.data.total <= r.data.requests.length;
    // Only a complete list proves that a card missing from it is no longer pending.
    if (complete) {
      const live = new Set(r.data.requests.map((e) => e.id));
      for (const c of cards.values()) {
        if (!c.done && !live.has(c.entry.id)) finish(c, 'resolved-elsewhere', null, 'No longer pending (answered elsewhere or expired).');
      }
    }
    r.data.requests.forEach(add);
    beyond = Math.max(0, r.data.total - r.data.requests.length);
    const more = document.getElementById('more');
    more.hidden = complete;
    document.getElementById('more-text').textContent = complete ? '' :
      'Showing ' + r.data.requests.length + ' of ' + r.data.total + ' pending requests (oldest deadlines first).';
    refreshCount();
    openLinked();
  }
  document.getElementById('more-btn').addEventListener('click', () => { shown += PAGE; load(); });

  // A `#r=ID` link (the guard's log line names one per waiting request) opens that card:
  // selected, scrolled into view and focused.
  function openLinked() {
    const m = /^#r=([A-Za-z0-9_-]+)$/.exec(location.hash);
    const c = m && cards.get(m[1]);
    if (!c) return;
    select(c);
    c.node.scrollIntoView({ block: 'center' });
    c.node.focus();
  }
  window.addEventListener('hashchange', openLinked);

  // Search: cards whose text does not contain the words are hidden (never decided).
  const search = document.getElementById('search');
  function applySearch() {
    const q = search.value.trim().toLowerCase();
    for (const c of cards.values()) {
      c.node.hidden = !!q && !c.node.textContent.toLowerCase().includes(q);
    }
  }
  search.addEventListener('input', applySearch);
  // Compact view: the command and its buttons only; remembered in this browser.
  const compact = document.getElementById('compact');
  function setCompact(on) {
    list.classList.toggle('compact', on);
    compact.setAttribute('aria-pressed', on ? 'true' : 'false');
    try { localStorage.setItem('sg-compact', on ? '1' : ''); } catch (_) { /* private mode */ }
  }
  compact.addEventListener('click', () => setCompact(!list.classList.contains('compact')));
  try { setCompact(localStorage.getItem('sg-compact') === '1'); } catch (_) { /* ignore */ }
  // Bulk deny: the ticked, still pending, visible cards, after one confirmation.
  document.getElementById('bulk-deny').addEventListener('click', async () => {
    const chosen = [...cards.values()].filter((c) => !c.done && c.pick.checked && !c.node.hidden);
    if (!chosen.length) { SG.banner('Tick the requests to deny first.'); return; }
    if (!window.confirm('Deny ' + chosen.length + ' selected request' + (chosen.length > 1 ? 's' : '') + '?')) return;
    for (const c of chosen) await decide(c, 'deny');
  });

  // The stream failed. EventSource retries by itself only while the server is unreachable;
  // a refusal (a session the guard no longer knows after a restart or logout, or every
  // stream slot taken) closes it for good. Ask the session: gone → "Not signed in";
  // otherwise reconnect in a few seconds.
  let checking = false;
  async function lost() {
    if (checking) return;
    checking = true;
    try {
      const r = await fetch('/api/session', { credentials: 'same-origin' });
      if (r.status === 401) { if (es) es.close(); SG.signedOut(); return; }
      if (es && es.readyState === EventSource.CLOSED) setTimeout(connect, 3000);
    } catch (_) {
      if (es && es.readyState === EventSource.CLOSED) setTimeout(connect, 3000);
    } finally {
      checking = false;
    }
  }

  function connect() {
    if (es) es.close();
    es = new EventSource('/api/events');
    const liveEl = document.getElementById('live');
    es.onopen = () => { liveEl.textContent = '● live'; liveEl.className = 'live on'; load(); };
    es.onerror = () => { liveEl.textContent = '○ reconnecting…'; liveEl.className = 'live off'; lost(); };
    es.addEventListener('added', (m) => add(JSON.parse(m.data)));
    const done = (m) => {
      const d = JSON.parse(m.data);
      const c = cards.get(d.id);
      if (!c) return;
      const note = d.state === 'expired' ?
        'EXPIRED — nobody decided in time; the agent was told ' + ((d.decision && d.decision.reason) || 'approval-timeout') + '.' : null;
      finish(c, d.state, d.decision, note);
    };
    es.addEventListener('resolved', done);
    es.addEventListener('expired', done);
    es.addEventListener('resync', load);
    es.addEventListener('signed-out', () => { es.close(); SG.signedOut(); });
  }

  function move(dir) {
    const open = [...list.children].map((n) => cards.get(n.getAttribute('data-id'))).filter((c) => c && !c.done);
    if (!open.length) return;
    const i = Math.max(0, open.indexOf(selected));
    const next = open[Math.min(open.length - 1, Math.max(0, i + dir))];
    select(next);
    next.node.focus();
  }

  document.addEventListener('keydown', (ev) => {
    if (ev.target && (ev.target.tagName === 'INPUT' || ev.target.tagName === 'TEXTAREA') ) return;
    if (ev.ctrlKey || ev.metaKey || ev.altKey) return;
    const c = selected && !selected.done ? selected : null;
    switch (ev.key) {
      case 'j': move(1); break;
      case 'k': move(-1); break;
      case 'a': if (c) decide(c, 'allow-once'); break;
      case 'A':
        // A stored grant outlives this request: one key press never makes one unasked.
        if (c && c.entry.offered.includes('allow-always') &&
            window.confirm('Allow always: store a grant for this exact command?')) decide(c, 'allow-always');
        break;
      case 'd': if (c) { ev.preventDefault(); c.reason.focus(); } break;
      case 'D': if (c) decide(c, 'deny'); break;
      default: return;
    }
  });

  document.getElementById('notify').addEventListener('click', async () => {
    if (!('Notification' in window)) { SG.banner('This browser cannot show notifications.'); return; }
    const p = await Notification.requestPermission();
    document.getElementById('notify').textContent = p === 'granted' ? 'Notifications on' : 'Notifications blocked';
  });

  (async () => {
    if (!(await SG.session())) return;
    document.getElementById('inbox').hidden = false;
    connect();
    setInterval(tick, 250);
  })();
})();
