//! Tenants (CONTRACT §20): the checked name, and the refusal of a role that would see every
//! tenant. Row-level security (schema 10, `v10.sql`) does the isolating.

use std::sync::Arc;

use super::conn::Conn;
use super::{PgError, reason};

/// The longest tenant name.
pub const MAX_TENANT_BYTES: usize = 64;

/// `tenant`, if it can be one: 1 to [`MAX_TENANT_BYTES`] ASCII letters, digits, `.`, `_` or
/// `-` (it is written into the `BEGIN` batch and the connection's options, so nothing else may
/// be in it).
pub(super) fn checked(tenant: &str) -> Result<Arc<str>, PgError> {
    let ok = !tenant.is_empty()
        && tenant.len() <= MAX_TENANT_BYTES
        && tenant.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    match ok {
        true => Ok(Arc::from(tenant)),
        false => Err(PgError::Tenant {
            tenant: crate::text::printable(tenant).chars().take(80).collect(),
            reason: format!("a tenant is 1 to {MAX_TENANT_BYTES} ASCII letters, digits, `.`, `_` or `-`"),
        }),
    }
}

/// Refuses a role that bypasses row-level security (a superuser, or BYPASSRLS): with it, a
/// tenant's connection would see every tenant's rows.
pub(super) async fn refuse_bypass(conn: &mut Conn, target: &str, tenant: &str) -> Result<(), PgError> {
    let row = conn
        .query_opt(
            "SELECT current_user::text, rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user",
            &[],
        )
        .await
        .map_err(|e| PgError::Query { target: target.to_owned(), doing: "reading the role", reason: reason(&e) })?;
    match row {
        Some(row) if row.get::<_, bool>(1) => Err(PgError::Tenant {
            tenant: tenant.to_owned(),
            reason: format!(
                "the role `{}` bypasses row-level security (a superuser, or BYPASSRLS) and would see every tenant; \
                 connect as a role without it",
                crate::text::printable(row.get::<_, &str>(0))
            ),
        }),
        _ => Ok(()),
    }
}
