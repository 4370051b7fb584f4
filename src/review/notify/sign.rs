//! Signatures per the Standard Webhooks specification: `webhook-signature: v1,<base64>` of the
//! HMAC-SHA256 of `{id}.{timestamp}.{body}`, keyed with the secret's bytes (the base64 after
//! `whsec_`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{KeyInit, Mac};

use super::NotifyError;

/// A receiver's signing secret, read from its environment variable; never printed.
#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

impl Secret {
    /// The secret `text` (`whsec_` and base64, as Standard Webhooks writes it), from variable
    /// `var` (named in the error; the value never is).
    ///
    /// ```
    /// use planlock::review::notify::Secret;
    /// let secret = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "HOOK_SECRET")?;
    /// let signature = secret.sign("msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, br#"{"test": 2432232314}"#);
    /// assert_eq!(signature, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    /// assert!(Secret::parse("no prefix", "HOOK_SECRET").is_err());
    /// # Ok::<(), planlock::review::notify::NotifyError>(())
    /// ```
    pub fn parse(text: &str, var: &str) -> Result<Secret, NotifyError> {
        let refused = |why: &str| NotifyError::Secret { var: var.to_owned(), why: why.to_owned() };
        let encoded = text.trim().strip_prefix("whsec_").ok_or_else(|| refused("it does not start with `whsec_`"))?;
        let bytes = STANDARD.decode(encoded).map_err(|_| refused("what follows `whsec_` is not base64"))?;
        if bytes.len() < 16 {
            return Err(refused("it holds fewer than 16 bytes"));
        }
        Ok(Secret(bytes))
    }

    /// The `webhook-signature` header's value for message `id` sent at `timestamp` (Unix
    /// seconds) with `body`.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        // HMAC takes a key of any length: this cannot fail.
        let Ok(mut mac) = hmac::Hmac::<sha2::Sha256>::new_from_slice(&self.0) else { return String::new() };
        mac.update(id.as_bytes());
        mac.update(b".");
        mac.update(timestamp.to_string().as_bytes());
        mac.update(b".");
        mac.update(body);
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }
}
