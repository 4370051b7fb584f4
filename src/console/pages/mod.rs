//! The console's pages and its login form, rendered on the server from the library's reads: the
//! sessions (paused first, filterable, searchable, paged), one session ([`history`]: each cycle
//! once, with its pause, decisions and failure), the inbox ([`inbox`](mod@inbox): a row per pause,
//! filters and search) and a pause's own page (what it shows, the forms that decide on it, what was
//! decided on its step before). Each page is a view — a plain struct of what it shows — and a
//! template (`templates.rs`) that escapes every value of it.

mod forms;
mod history;
mod inbox;
mod login;
mod sessions;

pub use forms::Forms;
use forms::{standing, who};
pub use history::session;
pub use inbox::{EditKept, PAUSES_PER_PAGE, inbox, pause_page, row_anchor};
pub use login::login;
use sessions::problems;
pub use sessions::{PER_PAGE, sessions};
