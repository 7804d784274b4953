//! Standard Webhooks signatures, asymmetric scheme `v1a`: an Ed25519
//! signature of `{webhook-id}.{webhook-timestamp}.{body}`, in the header
//! `webhook-signature` as `v1a,` and the signature in standard base64. The
//! key is the production signing key, published at `/keys` and rotated with
//! `query-api signing-keys`; a receiver tries each key of the set.

use read_model::Audience;

use crate::signing::{Signer, SigningError};

/// The three headers of a signed delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedHeaders {
    /// `webhook-id`: the same on every attempt of one message.
    pub id: String,
    /// `webhook-timestamp`: seconds since the epoch, of this attempt.
    pub timestamp: i64,
    /// `webhook-signature`.
    pub signature: String,
    /// The id of the key that signed (sent as `webhook-key-id`, a hint only).
    pub kid: String,
}

/// Signs one attempt of message `id` with body `body`.
pub fn sign(signer: &Signer, id: &str, timestamp: i64, body: &[u8]) -> Result<SignedHeaders, SigningError> {
    let mut content = format!("{id}.{timestamp}.").into_bytes();
    content.extend_from_slice(body);
    let (kid, signature) = signer.sign_bytes(Audience::Production, &content)?;
    Ok(SignedHeaders { id: id.to_owned(), timestamp, signature: format!("v1a,{}", standard_base64(&signature)), kid })
}

/// Padded standard base64 (RFC 4648, section 4), which Standard Webhooks uses.
fn standard_base64(bytes: &[u8]) -> String {
    let mut text: String = read_model::base64url::encode(bytes)
        .chars()
        .map(|symbol| match symbol {
            '-' => '+',
            '_' => '/',
            other => other,
        })
        .collect();
    while !text.len().is_multiple_of(4) {
        text.push('=');
    }
    text
}

#[cfg(test)]
mod tests {
    use ed25519_dalek::{Signature, Verifier};

    use super::*;
    use crate::signing::Keyring;

    #[test]
    fn the_signature_is_of_id_timestamp_and_body_and_verifies_with_the_published_key() {
        let keyring = Keyring::first(read_model::calendar::Timestamp(0), [[7; 32], [9; 32]]);
        let signer = Signer::of(&keyring);
        let headers = sign(&signer, "msg_1", 1_700_000_000, b"{\"a\":1}").expect("signed");
        let encoded = headers.signature.strip_prefix("v1a,").expect("the v1a scheme");
        assert_eq!(encoded.len(), 88, "64 bytes in padded base64");
        let bytes = read_model::base64url::decode(&encoded.trim_end_matches('=').replace('+', "-").replace('/', "_"))
            .expect("base64");
        let signature = Signature::from_slice(&bytes).expect("a signature");
        let (_, key) = keyring.signing_key(Audience::Production).expect("a production key");
        let public = key.verifying_key();
        assert!(public.verify(b"msg_1.1700000000.{\"a\":1}", &signature).is_ok());
        assert!(public.verify(b"msg_1.1700000000.{\"a\":2}", &signature).is_err(), "another body");
        assert_eq!(standard_base64(&[0xfb, 0xff]), "+/8=");
    }
}
