//! One page per file.

mod comparison;
mod comparisons;
mod delete_comparison;
mod delete_run;
mod home;
mod import;
mod new_run;
mod not_found;
mod run;
mod runs;

pub use comparison::ComparisonPage;
pub use comparisons::ComparisonsPage;
pub use delete_comparison::DeleteComparisonPage;
pub use delete_run::DeleteRunPage;
pub use home::HomePage;
pub use import::{IMPORT_PATH, ImportFormState, ImportPage};
pub use new_run::NewRunPage;
pub use not_found::NotFound;
pub use run::RunPage;
pub use runs::{COMPARE_PATH, RunsPage};
