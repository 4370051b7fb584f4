//! `planlock pgvector`: install the pgvector tier of retrieval by meaning in a database (the
//! `vector` extension, the embeddings table and its HNSW index, the stored vectors copied in),
//! for the provider `postgres-pgvector`. Refused, saying so, where the server has no pgvector.

use serde::Serialize;

use crate::error::{CliError, EXIT_VALID};
use crate::output::{Output, Report, Text, line};

/// The tier installed.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Installed {
    dimension: usize,
    copied_vectors: u64,
    ef_search: u32,
}

impl Report for Installed {
    fn text(&self, out: &mut Text) {
        line!(
            out,
            "the pgvector tier is installed for vectors of {} numbers ({} stored vectors copied in); \
             bundles may now name the provider `postgres-pgvector` (ef_search {})",
            self.dimension,
            self.copied_vectors,
            self.ef_search
        );
    }
}

pub fn install(out: &mut Output, database: &str, dimension: usize) -> Result<u8, CliError> {
    let db = planlock::pg::PgDatabase::connect(database).map_err(|e| CliError::of(&e))?;
    let copied_vectors = db.install_pgvector(dimension).map_err(|e| CliError::of(&e))?;
    out.report(&Installed {
        dimension,
        copied_vectors,
        ef_search: planlock::store::postgres::pgvector::DEFAULT_EF_SEARCH,
    });
    Ok(EXIT_VALID)
}
