//! The `word_enum!` macro: closed vocabularies that read and write as lowercase words.

/// Declares a closed vocabulary that reads and writes as lowercase words, with a parse
/// error naming the field and the accepted values.
macro_rules! word_enum {
    ($(#[$meta:meta])* $name:ident, $field:literal, { $($variant:ident => $word:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, ::serde::Serialize, ::serde::Deserialize)]
        #[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
        #[serde(rename_all = "snake_case")]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $word),+ }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::std::str::FromStr for $name {
            type Err = $crate::ValidationError;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s.trim().to_ascii_lowercase().as_str() {
                    $($word => Ok($name::$variant),)+
                    other => Err($crate::ValidationError::new(
                        $field,
                        format!("`{other}` is not one of: {}", [$($word),+].join(", ")),
                    )),
                }
            }
        }
    };
}
