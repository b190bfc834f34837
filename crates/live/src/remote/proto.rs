//! The messages of Prometheus remote write 1.0 (`prompb/types.proto`, `remote.proto`): only
//! what volley sends. Field numbers are the protocol's; prost encodes them.

/// `prometheus.WriteRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    /// The series.
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

/// `prometheus.TimeSeries`: labels sorted by name, with `__name__`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// The series' labels.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    /// Float samples.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
    /// Native histogram samples.
    #[prost(message, repeated, tag = "4")]
    pub histograms: Vec<Histogram>,
}

/// `prometheus.Label`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    /// The name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// `prometheus.Sample`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// The value.
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

/// `prometheus.BucketSpan`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BucketSpan {
    /// Gap to the previous span (or the first bucket's index).
    #[prost(sint32, tag = "1")]
    pub offset: i32,
    /// Consecutive buckets.
    #[prost(uint32, tag = "2")]
    pub length: u32,
}

/// `prometheus.Histogram` (integer counts only).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    /// Observations.
    #[prost(uint64, tag = "1")]
    pub count_int: u64,
    /// Their sum.
    #[prost(double, tag = "3")]
    pub sum: f64,
    /// Buckets per power of two: 2^schema.
    #[prost(sint32, tag = "4")]
    pub schema: i32,
    /// Observations at most this far from 0 are in the zero bucket.
    #[prost(double, tag = "5")]
    pub zero_threshold: f64,
    /// The zero bucket's count.
    #[prost(uint64, tag = "6")]
    pub zero_count_int: u64,
    /// Spans of positive buckets.
    #[prost(message, repeated, tag = "11")]
    pub positive_spans: Vec<BucketSpan>,
    /// Their counts, each as the difference from the previous bucket's.
    #[prost(sint64, repeated, tag = "12")]
    pub positive_deltas: Vec<i64>,
    /// `UNKNOWN` (0), `YES` (1), `NO` (2), `GAUGE` (3).
    #[prost(int32, tag = "14")]
    pub reset_hint: i32,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "15")]
    pub timestamp: i64,
}
