//! The access file installed in the database for a tenant (CONTRACT §18, amended; schema 12):
//! one row a tenant in `planlock_access`, read by every path that decides or acts on the
//! tenant's sessions.

use tokio_postgres::types::Type;

use crate::pg::{PgDatabase, PgError};
use crate::session::InstalledAccess;

/// The access file installed for `db`'s tenant, if one is.
pub async fn installed_access(db: &PgDatabase) -> Result<Option<InstalledAccess>, PgError> {
    let mut conn = db.connection().await?;
    let sql = "SELECT body, tenant FROM planlock_access WHERE tenant = planlock_tenant()";
    let rows = conn.query_typed(sql, &[]).await.map_err(db.failed("reading the installed access file"))?;
    Ok(rows.first().map(|row| {
        let tenant: String = row.get(1);
        let source = format!(
            "the access file installed in PostgreSQL at {} for tenant `{}`",
            db.target(),
            crate::text::printable(&tenant)
        );
        InstalledAccess { source, text: row.get(0) }
    }))
}

/// Installs `text` as the access file of `db`'s tenant (replacing the one there). The caller
/// has checked it.
pub async fn install_access(db: &PgDatabase, text: &str) -> Result<(), PgError> {
    let mut conn = db.connection().await?;
    let sql = "INSERT INTO planlock_access (body) VALUES ($1)
               ON CONFLICT (tenant) DO UPDATE SET body = EXCLUDED.body, installed_at = now()";
    conn.query_typed(sql, &[(&text, Type::TEXT)]).await.map_err(db.failed("installing the access file"))?;
    Ok(())
}

/// Removes the access file of `db`'s tenant: whether there was one.
pub async fn uninstall_access(db: &PgDatabase) -> Result<bool, PgError> {
    let mut conn = db.connection().await?;
    let sql = "DELETE FROM planlock_access WHERE tenant = planlock_tenant() RETURNING 1";
    let rows = conn.query_typed(sql, &[]).await.map_err(db.failed("removing the access file"))?;
    Ok(!rows.is_empty())
}
