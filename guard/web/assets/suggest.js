// History's suggested grants: a shape approved again and again, offered as the exact grant
// it would make (GET /api/grants/suggestions), made with one click (its accept endpoint).
'use strict';
(() => {
  const { el, vis, api } = SG;
  const box = document.getElementById('suggestions');
  const rows = document.getElementById('suggest-rows');
  if (!box || !rows) return;

  function row(s) {
    const make = el('button', { type: 'button', class: 'allow', 'data-suggest': s.inboxId }, 'Make this grant');
    const status = el('span', { class: 'card-status', role: 'status' });
    make.addEventListener('click', async () => {
      make.disabled = true;
      const r = await api('POST', '/api/grants/suggestions/' + encodeURIComponent(s.inboxId) + '/accept');
      status.textContent = r.ok ? 'Granted ' + r.data.id + ' (see Grants).' : 'Not made: ' + (r.data.message || r.status);
      if (!r.ok) make.disabled = false;
    });
    return el('li', { class: 'row', 'data-suggest-row': s.inboxId },
      el('code', { 'data-field': 'patterns' }, vis((s.patterns || []).join(' ; '))),
      el('p', {}, 'approved ' + s.approvals + ' times · ', vis(s.where), ' · until ' + SG.time(s.expiresMs)),
      el('p', {}, make, ' ', status));
  }

  (async () => {
    const r = await api('GET', '/api/grants/suggestions');
    if (!r.ok) return;
    const list = r.data.suggestions || [];
    rows.replaceChildren(...list.map(row));
    box.hidden = list.length === 0;
  })();
})();
