//! The data file of a requests file (`[data] file = "users.csv"`): CSV with a header row whose
//! names are the columns `{row.COLUMN}` reads, every value kept as the file's bytes.

use volley_plan::workload::{Data, RowOrder};

/// The rows of CSV `bytes`; `shown` names the file in messages. Every record has one value
/// per column, there is at least one record, and column names are distinct.
pub(super) fn parse(bytes: &[u8], shown: &str, order: RowOrder) -> Result<Data, String> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(bytes);
    let header = reader
        .byte_headers()
        .map_err(|e| csv_error(shown, &e))?
        .clone();
    let mut columns: Vec<String> = Vec::with_capacity(header.len());
    for name in header.iter() {
        let name = String::from_utf8_lossy(name).trim().to_string();
        if name.is_empty() {
            return Err(format!(
                "{shown}: column {} of the header row has no name",
                columns.len() + 1
            ));
        }
        if columns.contains(&name) {
            return Err(format!(
                "{shown}: the header row names column `{name}` twice"
            ));
        }
        columns.push(name);
    }
    if columns.is_empty() {
        return Err(format!(
            "{shown}: empty: expected a header row naming the columns, then rows"
        ));
    }
    let mut rows = Vec::new();
    for record in reader.byte_records() {
        let record = record.map_err(|e| csv_error(shown, &e))?;
        rows.push(record.iter().map(<[u8]>::to_vec).collect());
    }
    if rows.is_empty() {
        return Err(format!(
            "{shown}: no rows after the header row ({})",
            columns.join(", ")
        ));
    }
    Ok(Data {
        columns,
        rows,
        order,
    })
}

/// The csv crate's error, at its line of the file.
fn csv_error(shown: &str, e: &csv::Error) -> String {
    use csv::ErrorKind;
    match e.kind() {
        ErrorKind::UnequalLengths {
            pos,
            expected_len,
            len,
        } => {
            let line = pos.as_ref().map_or(0, |p| p.line());
            let values = if *len == 1 { "value" } else { "values" };
            format!("{shown}:{line}: a row of {len} {values} where the header row names {expected_len} columns")
        }
        _ => {
            let line = e.position().map(|p| format!(":{}", p.line()));
            format!("{shown}{}: {e}", line.unwrap_or_default())
        }
    }
}

/// The first row (1-based, counting from the first after the header) whose value in column
/// `col` has a byte `bad` refuses.
pub(super) fn first_bad_row(data: &Data, col: usize, bad: impl Fn(u8) -> bool) -> Option<usize> {
    data.rows
        .iter()
        .position(|r| r.get(col).is_some_and(|v| v.iter().any(|b| bad(*b))))
        .map(|i| i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_bytes_by_column() {
        let d = parse(
            b"id,email\n1,a@x.org\n2,\"b,c@x.org\"\n",
            "users.csv",
            RowOrder::Random,
        )
        .unwrap();
        assert_eq!(d.columns, ["id", "email"]);
        assert_eq!(d.rows.len(), 2);
        assert_eq!(d.rows[1][1], b"b,c@x.org");
        assert_eq!(d.order, RowOrder::Random);
        assert_eq!(first_bad_row(&d, 1, |b| b == b','), Some(2));
        assert_eq!(first_bad_row(&d, 0, |b| b == b','), None);
    }

    #[test]
    fn bad_files_are_refused_with_their_line() {
        let e = parse(b"id,email\n1,a\n2\n", "u.csv", RowOrder::Sequential).unwrap_err();
        assert_eq!(
            e,
            "u.csv:3: a row of 1 value where the header row names 2 columns"
        );
        let e = parse(b"id,email\n", "u.csv", RowOrder::Sequential).unwrap_err();
        assert_eq!(e, "u.csv: no rows after the header row (id, email)");
        let e = parse(b"", "u.csv", RowOrder::Sequential).unwrap_err();
        assert!(e.contains("empty"), "{e}");
        let e = parse(b"id,id\n1,2\n", "u.csv", RowOrder::Sequential).unwrap_err();
        assert!(e.contains("column `id` twice"), "{e}");
        let e = parse(b"id,\n1,2\n", "u.csv", RowOrder::Sequential).unwrap_err();
        assert!(e.contains("column 2 of the header row has no name"), "{e}");
    }
}
