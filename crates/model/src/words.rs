//! `words!`: an enum whose values are words (in the JSON, on the command line, in a file),
//! declared once with its words: `as_str`, `parse`, `ALL` and `Display` come from the list.

/// Defines an enum of words: each variant is written `Variant = "word"`. The enum keeps its
/// attributes (derives, serde's renaming: a test beside each checks serde writes the same
/// words) and gains `ALL`, `as_str`, `parse` and `Display`.
#[macro_export]
macro_rules! words {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident = $word:literal,)*
        }
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $($(#[$vmeta])* $variant,)*
        }

        // Not every enum of words is parsed or listed in every crate.
        #[allow(dead_code)]
        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The word written and read for it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)*
                }
            }

            /// The value whose word is `word`.
            pub fn parse(word: &str) -> Option<$name> {
                match word {
                    $($word => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

#[cfg(test)]
mod tests {
    words! {
        /// A test enum.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Colour {
            /// Red.
            Red = "red",
            /// Dark blue.
            DarkBlue = "dark-blue",
        }
    }

    #[test]
    fn the_words_are_the_list() {
        assert_eq!(Colour::ALL, &[Colour::Red, Colour::DarkBlue]);
        assert_eq!(Colour::DarkBlue.as_str(), "dark-blue");
        assert_eq!(Colour::parse("dark-blue"), Some(Colour::DarkBlue));
        assert_eq!(Colour::parse("Red"), None);
        assert_eq!(Colour::Red.to_string(), "red");
    }
}
