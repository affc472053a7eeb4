'use strict';
(() => {
  // The token is in the fragment (never sent to a server log); drop it from the address bar.
  const m = /[#&]t=([A-Za-z0-9_-]+)/.exec(location.hash);
  const token = m ? m[1] : '';
  history.replaceState(null, '', '/login');
  const msg = document.getElementById('login-msg');
  const form = document.getElementById('login-form');
  if (!token) {
    msg.textContent = 'This page needs a login link. Run: sanctum-guard web login-link';
    document.getElementById('signin').disabled = true;
  }
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    msg.textContent = 'Signing in…';
    const totp = document.getElementById('totp').value.trim();
    const body = { token };
    if (totp) body.totp = totp;
    const r = await SG.api('POST', '/api/login', body);
    if (r.ok) { location.replace('/'); return; }
    if (r.data.error === 'totp-required') {
      document.getElementById('totp-row').hidden = false;
      document.getElementById('totp').focus();
    }
    msg.textContent = r.status === 429 ? 'Too many attempts. Wait a minute and try again.'
      : (r.data.message || ('Sign-in failed (' + r.status + ')'));
  });
})();
