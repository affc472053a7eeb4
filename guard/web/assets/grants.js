// The Grants page: every live bounded grant (scope, patterns, where, expiry, uses left, who
// made it and on which request) with Revoke. Every field is put in with textContent.
'use strict';
(() => {
  const { el, vis, api } = SG;
  const rows = document.getElementById('rows');

  function left(g) {
    const parts = [];
    parts.push(g.expiresMs ? 'expires ' + SG.time(g.expiresMs) : 'no expiry');
    parts.push(g.usesLeft === null || g.usesLeft === undefined ? 'uses unlimited' : g.usesLeft + ' uses left');
    return parts.join(' · ');
  }

  function row(g) {
    const revoke = el('button', { type: 'button', class: 'deny', 'data-grant': g.id, 'aria-label': 'Revoke grant ' + g.id }, 'Revoke');
    const status = el('span', { class: 'card-status', role: 'status' });
    revoke.addEventListener('click', async () => {
      revoke.disabled = true;
      const r = await api('POST', '/api/grants/' + encodeURIComponent(g.id) + '/revoke');
      status.textContent = r.ok ? 'Revoked.' : 'Not revoked: ' + (r.data.message || r.status);
      if (r.ok) setTimeout(load, 300); else revoke.disabled = false;
    });
    return el('li', { class: 'row', 'data-id': g.id },
      el('div', { class: 'row-head' },
        el('span', { class: 'badge state' }, String(g.scope).toUpperCase()),
        el('code', { 'data-field': 'patterns' }, vis((g.patterns || []).join(' ; '))),
        el('span', { class: 'src' }, ' ' + g.id)),
      el('p', { 'data-field': 'where' }, vis(g.where)),
      el('p', { 'data-field': 'left' }, left(g)),
      el('p', {}, 'Made by ', vis(g.madeBy), ' at ' + SG.time(g.createdMs) + ' on request ',
        el('a', { href: '/history#q=' + encodeURIComponent(g.inboxId), 'data-field': 'from' }, vis(g.inboxId))),
      el('p', {}, revoke, ' ', status));
  }

  async function load() {
    const r = await api('GET', '/api/grants');
    if (!r.ok) return;
    SG.setServerNow(r.data.nowMs);
    const gs = r.data.grants || [];
    rows.replaceChildren(...gs.map(row));
    document.getElementById('empty').hidden = gs.length > 0;
    document.getElementById('count').textContent = gs.length + ' live';
  }

  (async () => {
    if (!(await SG.session())) return;
    document.getElementById('grants').hidden = false;
    await load();
  })();
})();
