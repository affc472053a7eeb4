use super::*;
use base64::Engine as _;
use openssl::ec::{EcGroup, EcKey, PointConversionForm};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::sign::Signer;
use serde_json::json;

struct Key {
    pkey: PKey<Private>,
    sec1: Vec<u8>,
}

fn key() -> Key {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).expect("group");
    let ec = EcKey::generate(&group).expect("key");
    let mut ctx = openssl::bn::BigNumContext::new().expect("ctx");
    let sec1 = ec
        .public_key()
        .to_bytes(&group, PointConversionForm::UNCOMPRESSED, &mut ctx)
        .expect("sec1");
    Key {
        pkey: PKey::from_ec_key(ec).expect("pkey"),
        sec1,
    }
}

fn registered(id: &str, k: &Key) -> Value {
    json!({"action": "registered", "credentialId": id, "name": "admin", "rpId": "localhost",
           "alg": "ES256", "publicKey": hex::encode(&k.sec1), "by": "web:admin/x"})
}

/// A signed record for request `inbox_id`/`hash` as an authenticator would make it.
fn signed(id: &str, k: &Key, inbox_id: &str, hash: &str, flags: u8) -> Value {
    let nonce = "00ff";
    let ch = binding(inbox_id, hash, "allow-once", nonce);
    let cd = json!({"type": "webauthn.get",
        "challenge": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(ch),
        "origin": "http://localhost:1"})
    .to_string();
    let mut ad = Sha256::digest(b"localhost").to_vec();
    ad.push(flags);
    ad.extend_from_slice(&[0, 0, 0, 1]);
    let mut s = Signer::new(MessageDigest::sha256(), &k.pkey).expect("signer");
    s.update(&ad).expect("ad");
    s.update(&Sha256::digest(cd.as_bytes())).expect("cd");
    let sig = s.sign_to_vec().expect("sign");
    json!({"action": "signed", "inboxId": inbox_id, "requestHash": hash,
           "decision": "allow-once", "nonce": nonce, "credentialId": id,
           "authenticatorData": hex::encode(ad), "clientDataJson": hex::encode(cd),
           "signature": hex::encode(sig), "by": "web:admin/x"})
}

#[test]
fn signed_decisions_hold_only_as_signed_by_a_live_key() {
    let (a, b) = (key(), key());
    let good = signed("c1", &a, "r1", "h1", FLAG_UP | FLAG_UV);
    let mut other_request = good.clone();
    other_request["inboxId"] = json!("r2");
    let mut other_hash = good.clone();
    other_hash["requestHash"] = json!("h2");
    let mut other_decision = good.clone();
    other_decision["decision"] = json!("allow-always");
    let mut flipped = good.clone();
    let mut sig = hex::decode(good["signature"].as_str().expect("sig")).expect("hex");
    let last = sig.len() - 1;
    sig[last] ^= 1;
    flipped["signature"] = json!(hex::encode(sig));
    let removed = json!({"action": "removed", "credentialId": "c1", "by": "cli"});
    type Case<'a> = (&'a str, Vec<Value>, Value, Result<(), AssertionError>);
    let cases: Vec<Case> = vec![
        (
            "signed by its key",
            vec![registered("c1", &a)],
            good.clone(),
            Ok(()),
        ),
        (
            "changed signature",
            vec![registered("c1", &a)],
            flipped,
            Err(AssertionError::BadSignature),
        ),
        (
            "moved to another request",
            vec![registered("c1", &a)],
            other_request,
            Err(AssertionError::ChallengeMismatch),
        ),
        (
            "another request's hash",
            vec![registered("c1", &a)],
            other_hash,
            Err(AssertionError::ChallengeMismatch),
        ),
        (
            "another decision",
            vec![registered("c1", &a)],
            other_decision,
            Err(AssertionError::ChallengeMismatch),
        ),
        (
            "key removed before it",
            vec![registered("c1", &a), removed],
            good.clone(),
            Err(AssertionError::RemovedKey("c1".into())),
        ),
        (
            "never registered",
            vec![],
            good.clone(),
            Err(AssertionError::UnknownKey("c1".into())),
        ),
        (
            "another key under its id",
            vec![registered("c1", &b)],
            good.clone(),
            Err(AssertionError::BadSignature),
        ),
        (
            "user not verified",
            vec![registered("c1", &a)],
            signed("c1", &a, "r1", "h1", FLAG_UP),
            Err(AssertionError::NotVerified),
        ),
    ];
    for (name, before, rec, want) in cases {
        let mut reg = Registry::default();
        for r in before {
            reg.observe(KIND, &r).expect(name);
        }
        assert_eq!(reg.observe(KIND, &rec), want, "{name}");
    }
}

#[test]
fn records_of_other_kinds_pass_and_bad_passkey_records_do_not() {
    let mut reg = Registry::default();
    assert_eq!(reg.observe("decision", &json!({"x": 1})), Ok(()));
    assert!(matches!(
        reg.observe(KIND, &json!({"action": "teleported"})),
        Err(AssertionError::Malformed(_))
    ));
}
