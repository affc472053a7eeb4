'use strict';
// Passkeys: the WebAuthn calls of the page. The guard's options carry binary values as
// base64url; the browser wants ArrayBuffers, and the guard wants base64url back.
(() => {
  const dec = (s) => Uint8Array.from(
    atob(s.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((s.length + 3) % 4)),
    (c) => c.charCodeAt(0)).buffer;
  const enc = (b) => btoa(String.fromCharCode(...new Uint8Array(b)))
    .replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
  // Absent is not null to the WebAuthn dictionaries: drop nulls.
  const clean = (v) => {
    if (Array.isArray(v)) return v.map(clean);
    if (v && typeof v === 'object') {
      const o = {};
      for (const [k, x] of Object.entries(v)) if (x !== null && x !== undefined) o[k] = clean(x);
      return o;
    }
    return v;
  };

  async function call(path, body) {
    const r = await SG.api('POST', path, body);
    if (!r.ok) throw new Error(r.data.message || ('Error ' + r.status));
    return r.data;
  }

  async function assertion(start) {
    const o = clean(start.options.publicKey);
    o.challenge = dec(o.challenge);
    (o.allowCredentials || []).forEach((c) => { c.id = dec(c.id); });
    const cred = await navigator.credentials.get({ publicKey: o });
    const r = cred.response;
    return {
      ceremony: start.ceremony,
      credential: {
        id: cred.id, rawId: enc(cred.rawId), type: cred.type, extensions: {},
        response: {
          authenticatorData: enc(r.authenticatorData), clientDataJSON: enc(r.clientDataJSON),
          signature: enc(r.signature), userHandle: r.userHandle ? enc(r.userHandle) : null,
        },
      },
    };
  }

  // Adds a passkey for the signed-in person.
  async function register() {
    const start = await call('/api/passkeys/register/start', {});
    const o = clean(start.options.publicKey);
    o.challenge = dec(o.challenge);
    o.user.id = dec(o.user.id);
    (o.excludeCredentials || []).forEach((c) => { c.id = dec(c.id); });
    const cred = await navigator.credentials.create({ publicKey: o });
    const r = cred.response;
    return call('/api/passkeys/register/finish', {
      ceremony: start.ceremony,
      credential: {
        id: cred.id, rawId: enc(cred.rawId), type: cred.type, extensions: {},
        response: { attestationObject: enc(r.attestationObject), clientDataJSON: enc(r.clientDataJSON) },
      },
    });
  }

  // Signs in with a registered passkey (no link, no code).
  async function signIn() {
    const done = await call('/api/passkey-login/finish',
      await assertion(await call('/api/passkey-login/start', {})));
    return done;
  }

  // The assertion an allow in a passkey category carries: its challenge binds this
  // request, its hash and the decision.
  async function forDecision(id, kind) {
    return assertion(await call('/api/requests/' + encodeURIComponent(id) + '/passkey', { decision: kind }));
  }

  function wire() {
    const msg = document.getElementById('passkey-msg') || document.getElementById('login-msg');
    const say = (t) => { if (msg) msg.textContent = t; };
    for (const b of document.querySelectorAll('button.passkey-signin')) {
      b.addEventListener('click', async () => {
        say('Waiting for your passkey…');
        try { await signIn(); location.replace('/'); } catch (e) { say('Passkey sign-in failed: ' + e.message); }
      });
    }
    const add = document.getElementById('passkey-add');
    if (add) {
      add.addEventListener('click', async () => {
        say('Waiting for your passkey…');
        try { const r = await register(); say('Passkey added (' + r.id.slice(0, 12) + '…).'); } catch (e) { say('Adding a passkey failed: ' + e.message); }
      });
    }
  }

  window.SGPasskey = { register, signIn, forDecision };
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', wire); else wire();
})();
