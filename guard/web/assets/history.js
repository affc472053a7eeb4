'use strict';
(() => {
  const { el, vis, api } = SG;
  const rows = document.getElementById('rows');

  function outcome(run, e) {
    if (!run) {
      if (e.state !== 'approved') return 'not run';
      return e.sourceDetail === 'socket-request' ? 'run by the requester (prompt only; the guard does not run it)' : 'no run recorded';
    }
    if (run.reason) return 'not run: ' + run.reason;
    const parts = [];
    if (run.timedOut) parts.push('timed out');
    if (run.exitCode !== null && run.exitCode !== undefined) parts.push('exit ' + run.exitCode);
    if (run.error) parts.push('error: ' + run.error);
    if (run.durationMs !== null && run.durationMs !== undefined) parts.push('ran ' + (run.durationMs / 1000).toFixed(2) + ' s');
    if (run.stdoutBytes !== null && run.stdoutBytes !== undefined) parts.push(run.stdoutBytes + ' B out, ' + run.stderrBytes + ' B err');
    if (run.outputSha256) parts.push('output sha256 ' + run.outputSha256.slice(0, 16) + '…' + (run.nodeId ? ' (node ' + run.nodeId.slice(0, 12) + '…)' : ''));
    return parts.join(' · ') || 'ran';
  }

  // The run's output as the audit record keeps it: head and tail, marked when cut.
  function output(run) {
    const o = run && run.output;
    if (!o || !o.bytes) return null;
    const text = o.truncated ? o.head + '\n… (' + o.bytes + ' bytes; middle not kept) …\n' + o.tail : o.head + o.tail;
    return el('pre', { class: 'output' }, vis(text));
  }

  function row(e) {
    const d = e.decision || {};
    const secs = e.resolvedMs && e.createdMs ? ((e.resolvedMs - e.createdMs) / 1000).toFixed(1) + ' s after asking' : '';
    let ran = e.run && e.run.finishedMs && d.atMs ? ' · finished ' + ((e.run.finishedMs - d.atMs) / 1000).toFixed(1) + ' s after the decision' : '';
    return el('li', { class: 'row ' + e.state, 'data-id': e.id },
      el('div', { class: 'row-head' },
        el('span', { class: 'badge state' }, e.state.toUpperCase()),
        el('span', { class: 'badge cat' }, vis(e.category)),
        el('span', { class: 'src' }, vis(e.source + ' · agent ' + e.agentId + (e.sessionKey ? ' · ' + e.sessionKey : ''))),
        el('time', { class: 'when' }, SG.time(e.resolvedMs || e.createdMs))),
      // A command reads as itself: no `exec ` prefix (the badge says what kind it is).
      el('pre', { class: 'cmd' }, vis(e.action && e.action.kind === 'exec' ? String(e.summary).replace(/^exec /, '') : e.summary)),
      el('dl', { class: 'kv' },
        el('dt', {}, 'decided by'), el('dd', {}, vis(SG.decisionText(d) || '—')),
        el('dt', {}, 'decision'), el('dd', { 'data-field': 'decision' },
          vis(SG.storedText(d, e) || d.kind || '—')),
        el('dt', {}, 'why'), el('dd', {}, vis(d.reason || (e.reasons || []).map((r) => r.code).join(', ') || '—')),
        el('dt', {}, 'answered'), el('dd', {}, secs || '—'),
        el('dt', {}, 'outcome'), el('dd', {}, vis(outcome(e.run, e) + ran)),
        el('dt', {}, 'output'), el('dd', {}, output(e.run) || '—'),
        el('dt', {}, 'request hash'), el('dd', { class: 'mono hash' }, e.requestHash),
        // In a fleet each guard keeps its own audit log: where this decision is recorded.
        ...(e.decidedAt ? [el('dt', {}, 'recorded'), el('dd', { 'data-field': 'audit-ref' },
          auditRef(e.decidedAt))] : [])));
  }

  // The reference as a link to the deciding guard's page of the record, when that guard
  // published its address (the guard builds `link` from the fleet's guards table, never from
  // the row); else as text. Only an http(s) link is ever made.
  function auditRef(r) {
    const text = vis('audit record #' + r.auditSeq + ' on ' + r.guard);
    let url = null;
    try { url = r.link ? new URL(r.link) : null; } catch (_) { url = null; }
    if (!url || (url.protocol !== 'https:' && url.protocol !== 'http:')) return text;
    return el('a', { href: url.href, target: '_blank', rel: 'noopener noreferrer' }, text);
  }

  // History is searched and paged by the guard (GET /api/requests): every decision is
  // reachable, however many there are; the page holds one page of them at a time.
  const PAGE = 50;
  let offset = 0;
  let total = 0;
  let newer = 0;
  let seq = 0;

  function query() {
    const p = new URLSearchParams({ state: 'resolved', limit: String(PAGE), offset: String(offset) });
    const add = (k, id) => { const v = document.getElementById(id).value.trim(); if (v) p.set(k, v); };
    add('status', 'f-state');
    add('source', 'f-source');
    add('by', 'f-by');
    add('q', 'f-text');
    return '/api/requests?' + p.toString();
  }

  function pager(shown) {
    const first = shown ? offset + 1 : 0;
    // With nothing to show, #empty says so; the count line stays empty.
    document.getElementById('count').textContent = total === 0 ? '' :
      'Showing ' + first + '–' + (offset + shown) + ' of ' + total +
      (newer ? ' · ' + newer + ' newer since this page loaded' : '');
    document.getElementById('prev').disabled = offset === 0;
    document.getElementById('next').disabled = offset + shown >= total;
  }

  // Loads the page at `offset` for the filters as they are now; an answer that a later
  // request overtook is dropped.
  async function load() {
    const mine = ++seq;
    const r = await api('GET', query());
    if (!r.ok || mine !== seq) return;
    total = r.data.total || 0;
    if (offset > 0 && offset >= total) { offset = Math.max(0, total - PAGE); return load(); }
    if (offset === 0) newer = 0;
    rows.textContent = '';
    r.data.requests.forEach((e) => rows.appendChild(row(e)));
    document.getElementById('empty').hidden = r.data.requests.length > 0;
    pager(r.data.requests.length);
  }

  // Does `e` pass the filters as they are set now? (The guard's own search, for one new
  // row: summary, id, reason and the person's name.)
  function matches(e) {
    const st = document.getElementById('f-state').value;
    const src = document.getElementById('f-source').value;
    const by = document.getElementById('f-by').value;
    const q = document.getElementById('f-text').value.trim().toLowerCase();
    return (!st || e.state === st) && (!src || e.source === src) &&
      (!by || (e.decision && e.decision.by) === by) &&
      (!q || (e.summary + ' ' + e.id + ' ' + ((e.decision && e.decision.reason) || '') + ' ' +
        ((e.decision && e.decision.name) || '')).toLowerCase().includes(q));
  }

  // Live updates. On the first page each resolved or expired request is fetched on its own
  // and put on top (a burst of more than 50 within 300 ms is one reload); further back, the
  // page stays put and says how many are newer.
  const queued = new Set();
  let timer = null;
  function changed(m) {
    if (offset > 0) { newer += 1; pager(rows.children.length); return; }
    try { queued.add(JSON.parse(m.data).id); } catch (_) { return; }
    if (!timer) timer = setTimeout(flush, 300);
  }
  async function flush() {
    timer = null;
    const ids = [...queued];
    queued.clear();
    if (ids.length > 50) { await load(); return; }
    for (const id of ids) {
      const r = await api('GET', '/api/requests/' + encodeURIComponent(id));
      if (!r.ok || offset > 0) continue;
      const old = [...rows.children].find((n) => n.getAttribute('data-id') === r.data.id);
      if (old) old.remove();
      else if (matches(r.data)) total += 1;
      if (matches(r.data)) rows.prepend(row(r.data));
      while (rows.children.length > PAGE) rows.lastChild.remove();
      document.getElementById('empty').hidden = rows.children.length > 0;
      pager(rows.children.length);
    }
  }

  let typing = null;
  function refilter() {
    clearTimeout(typing);
    typing = setTimeout(() => { offset = 0; load(); }, 250);
  }

  document.getElementById('filters').addEventListener('input', refilter);
  document.getElementById('filters').addEventListener('submit', (ev) => { ev.preventDefault(); clearTimeout(typing); offset = 0; load(); });
  document.getElementById('prev').addEventListener('click', () => { offset = Math.max(0, offset - PAGE); load(); });
  document.getElementById('next').addEventListener('click', () => { offset += PAGE; load(); });
  document.getElementById('verify').addEventListener('click', async () => {
    const out = document.getElementById('verify-result');
    out.textContent = 'Verifying…';
    out.className = 'verify';
    const r = await api('GET', '/api/audit/verify');
    if (r.ok && r.data.ok) {
      out.textContent = '✔ Chain intact: ' + r.data.records + ' records';
      out.className = 'verify good';
    } else if (r.ok) {
      out.textContent = '✘ Chain BROKEN at line ' + r.data.line + ': ' + r.data.what;
      out.className = 'verify bad';
    } else {
      out.textContent = 'Could not verify: ' + (r.data.message || r.status);
      out.className = 'verify bad';
    }
  });

  (async () => {
    if (!(await SG.session())) return;
    // `#q=TEXT` (the Grants page links a grant's request so) starts with that search.
    const linked = /^#q=([A-Za-z0-9_-]+)$/.exec(location.hash);
    if (linked) document.getElementById('f-text').value = linked[1];
    document.getElementById('history').hidden = false;
    await load();
    const es = new EventSource('/api/events');
    es.addEventListener('resolved', changed);
    es.addEventListener('expired', changed);
    es.addEventListener('resync', load);
  })();
})();
