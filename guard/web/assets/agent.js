// The Agent page: New Task (chat.send), Stop (chat.abort) and Status (sessions.list with the
// last message and pending approvals), all through the guard's own gateway connection.
'use strict';
(() => {
  const { el, vis, api } = SG;
  const list = document.getElementById('sessions');
  const pick = document.getElementById('t-session');

  function lastText(m) {
    if (!m) return '';
    const c = m.content;
    if (typeof c === 'string') return c;
    if (Array.isArray(c)) return c.map((p) => (p && p.text) || '').join('');
    return JSON.stringify(c ?? '');
  }

  function row(s) {
    const active = s.hasActiveRun === true;
    const stop = el('button', { type: 'button', class: 'deny', disabled: !active, 'data-key': s.key }, 'Stop');
    stop.addEventListener('click', async () => {
      stop.disabled = true;
      const r = await api('POST', '/api/agent/sessions/' + encodeURIComponent(s.key) + '/stop');
      SG.banner(r.ok ? '' : 'Stop failed: ' + (r.data.message || r.status));
      load();
    });
    const pending = (s.pendingApprovals || []).length;
    return el('li', { class: 'row', 'data-key': s.key },
      el('div', { class: 'row-head' },
        el('span', { class: 'badge state' }, active ? 'RUNNING' : String(s.status || 'idle').toUpperCase()),
        s.abortedLastRun ? el('span', { class: 'badge cat' }, 'aborted') : null,
        el('span', { class: 'src' }, vis(s.key)),
        pending ? el('a', { href: '/', class: 'badge cat' }, pending + ' pending approval' + (pending > 1 ? 's' : '')) : null,
        el('time', { class: 'when' }, SG.time(s.updatedAt)),
        stop),
      el('pre', { class: 'cmd' }, vis(lastText(s.lastMessage))));
  }

  async function load() {
    const r = await api('GET', '/api/agent/sessions');
    if (!r.ok) { if (r.status !== 401) SG.banner(r.data.message || 'cannot list sessions'); return; }
    const ss = r.data.sessions || [];
    list.replaceChildren(...ss.map(row));
    document.getElementById('empty').hidden = ss.length > 0;
    const chosen = pick.value;
    pick.replaceChildren(el('option', { value: '' }, 'a new session'),
      ...ss.map((s) => el('option', { value: s.key }, vis(s.key))));
    pick.value = chosen;
  }

  document.getElementById('task').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const msg = document.getElementById('t-message');
    const body = { message: msg.value };
    if (pick.value) body.sessionKey = pick.value;
    const r = await api('POST', '/api/agent/tasks', body);
    if (r.ok) { msg.value = ''; SG.banner(''); } else SG.banner('Not sent: ' + (r.data.message || r.status));
    load();
  });
  document.getElementById('refresh').addEventListener('click', load);

  (async () => {
    if (!(await SG.session())) { document.getElementById('agent').hidden = true; return; }
    document.getElementById('agent').hidden = false;
    await load();
    setInterval(load, 3000);
  })();
})();
