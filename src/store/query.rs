//! A search query's words: plain text, bounded whatever the input (CONTRACT §11).

/// The most distinct words of a search query that are searched for; later ones are ignored.
pub const MAX_QUERY_WORDS: usize = 32;

/// The longest word searched for, in bytes; a longer one is no word and is ignored.
pub const MAX_QUERY_WORD_BYTES: usize = 64;

/// The words of a search query, as plain text: split on anything that is not a letter or digit,
/// so no character of the input can reach a query language; each word once, in the order of
/// its first use, at most [`MAX_QUERY_WORDS`] of them, none longer than
/// [`MAX_QUERY_WORD_BYTES`]. So a query's cost is bounded whatever its text (CONTRACT §11).
///
/// ```
/// use planlock::store::{query_words, MAX_QUERY_WORDS};
/// assert_eq!(query_words("rotate the key; rotate it!"), ["rotate", "the", "key", "it"]);
/// let long = (0..10_000).map(|n| format!("w{}", n % 1000)).collect::<Vec<_>>().join(" ");
/// assert_eq!(query_words(&long).len(), MAX_QUERY_WORDS);
/// ```
pub fn query_words(query: &str) -> Vec<&str> {
    let mut words: Vec<&str> = Vec::new();
    for word in query.split(|c: char| !c.is_alphanumeric()) {
        if word.is_empty() || word.len() > MAX_QUERY_WORD_BYTES || words.contains(&word) {
            continue;
        }
        words.push(word);
        if words.len() == MAX_QUERY_WORDS {
            break;
        }
    }
    words
}
