'use strict';
// The inbox's queue: one dense line per request (state, category, command, source, time
// left), virtualised. The requests stay data in the inbox; only the rows near the viewport
// exist in the page, positioned by index and recycled as the page scrolls, so 10,000 pending
// cost a few dozen elements. A click (or Enter) on a row opens that request; nothing else
// ever does.
SG.queue = (queue, o) => {
  const { el, vis } = SG;
  const { stateLabel } = SG.card;
  /** Row pitch in px: `.qrow`'s height plus the gap in app.css. */
  const ROW_H = 34;
  /** Rows made above and below the viewport. */
  const OVERSCAN = 8;
  const shown = new Map(); // record -> row node
  const free = [];         // row nodes out of use, hidden
  let raf = 0;
  function render() { if (!raf) raf = requestAnimationFrame(paint); }

  function newRow() {
    const row = el('li', { class: 'qrow', tabindex: '0', role: 'button' },
      el('input', { type: 'checkbox', class: 'pick' }), el('span', { class: 'badge state' }),
      el('span', { class: 'badge cat' }), el('span', { class: 'qcmd mono' }),
      el('span', { class: 'qsrc' }), el('span', { class: 'qleft' }));
    queue.appendChild(row);
    return row;
  }

  function leftText(e, now) {
    const left = Math.ceil((e.deadlineMs - now) / 1000);
    return left > 0 ? left + ' s left' : 'deadline passed';
  }

  function fill(row, rec) {
    const e = rec.entry;
    const [pick, state, cat, cmd, src, left] = row.children;
    const what = SG.visText(o.commandText(e));
    row.setAttribute('data-id', e.id);
    row.id = 'q-' + e.id;
    row.className = 'qrow ' + (rec.done ? 'done ' + rec.state : 'pending');
    row.setAttribute('aria-label', 'Open: ' + what.slice(0, 160));
    pick.checked = o.picked(rec);
    pick.disabled = rec.done;
    pick.setAttribute('aria-label', 'Tick for bulk deny: ' + what.slice(0, 120));
    state.textContent = stateLabel(rec.state);
    cat.replaceChildren(vis(e.category));
    cmd.replaceChildren(vis(o.commandText(e)));
    // In a fleet the row also names the guard whose agent asked (it answers the agent).
    src.replaceChildren(vis(e.guard ? e.agentId + ' @ ' + e.guard : e.source + ' · ' + e.agentId));
    left.textContent = rec.done ? (rec.note || '') : leftText(e, SG.now());
  }

  function paint() {
    raf = 0;
    const items = o.items();
    const n = items.length;
    queue.style.height = n * ROW_H + 'px';
    const top = queue.getBoundingClientRect().top;
    const first = Math.max(0, Math.floor(-top / ROW_H) - OVERSCAN);
    const last = Math.min(n, Math.ceil((window.innerHeight - top) / ROW_H) + OVERSCAN);
    const want = new Set(items.slice(first, last));
    for (const [rec, row] of shown) {
      // A recycled row forgets its request: no hidden element keeps an id a shown row uses.
      if (!want.has(rec)) { shown.delete(rec); row.hidden = true; row.removeAttribute('id'); row.removeAttribute('data-id'); free.push(row); }
    }
    for (let i = first; i < last; i++) {
      const rec = items[i];
      let row = shown.get(rec);
      if (!row) { row = free.pop() || newRow(); row.hidden = false; row.dataset.ver = ''; shown.set(rec, row); }
      if (row.dataset.ver !== String(rec.ver) || row.getAttribute('data-id') !== rec.entry.id) {
        fill(row, rec);
        row.dataset.ver = String(rec.ver);
      }
      row.classList.toggle('open', o.isOpen(rec));
      row.style.transform = 'translateY(' + i * ROW_H + 'px)';
    }
    document.getElementById('empty').hidden = n > 0;
  }

  // Countdowns of the rows on screen.
  function tick(now) {
    for (const [rec, row] of shown) {
      if (rec.done) continue;
      const left = Math.ceil((rec.entry.deadlineMs - now) / 1000);
      row.lastChild.textContent = leftText(rec.entry, now);
      row.classList.toggle('urgent', left > 0 && left <= 5);
    }
  }

  window.addEventListener('scroll', render, { passive: true });
  window.addEventListener('resize', render);
  queue.addEventListener('click', (ev) => {
    const row = ev.target.closest('li.qrow');
    const rec = row && o.lookup(row.getAttribute('data-id'));
    if (!rec) return;
    if (ev.target.classList.contains('pick')) { o.pick(rec, ev.target.checked); return; }
    o.open(rec);
  });
  queue.addEventListener('keydown', (ev) => {
    if (ev.key !== 'Enter' || !ev.target.classList.contains('qrow')) return;
    const rec = o.lookup(ev.target.getAttribute('data-id'));
    if (rec) { ev.preventDefault(); o.open(rec); }
  });

  return { render, tick, ROW_H };
};
