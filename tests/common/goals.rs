//! Goals a planner might be given (CONTRACT §19): the model tests and the planner bench ask for
//! plans of these.

/// Twenty goals a planner might be given.
pub const GOALS: [&str; 20] = [
    "Answer how to rotate the API key, and remember the answer.",
    "Summarize last week's incidents for the on-call engineer.",
    "Decide whether backups must be encrypted, with the audit as evidence.",
    "Explain the deployment steps of the billing service.",
    "Find what we decided about password length and answer the user.",
    "Scan the repository and list the modules that handle payments.",
    "Answer a customer asking how to reset two-factor authentication.",
    "Record that the team adopted weekly dependency updates.",
    "Write a short release note for version 2.3.",
    "Recall earlier advice about database migrations and answer again.",
    "Draft a reply about the data retention policy.",
    "Check the security decisions and answer whether tokens may be logged.",
    "Answer in Korean how to rotate the signing key.",
    "Plan the answer to a question about rate limits, using memory only.",
    "Explain why the build failed yesterday, from the repository.",
    "Store the decision that staging mirrors production, with evidence.",
    "Answer how to request access to the analytics database.",
    "Give a one-line status of the migration project.",
    "Answer a question about on-call rotations and remember it.",
    "Decide the default timeout for outgoing HTTP calls and record it.",
];
