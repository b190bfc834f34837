//! The messages of OTLP metrics v1 (opentelemetry-proto: `collector/metrics/v1`, `metrics/v1`,
//! `common/v1`, `resource/v1`) and `google.rpc.Status`: only what volley sends or reads.
//! Field numbers are the protocol's; prost encodes them. Public so that a receiver (the
//! tests') can decode what volley sends.

/// `ExportMetricsServiceRequest`: the body of a push.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportMetricsServiceRequest {
    /// One per resource.
    #[prost(message, repeated, tag = "1")]
    pub resource_metrics: Vec<ResourceMetrics>,
}

/// `ExportMetricsServiceResponse`: a 2xx answer's body.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportMetricsServiceResponse {
    /// Set when some data points were refused (or with a warning).
    #[prost(message, optional, tag = "1")]
    pub partial_success: Option<ExportMetricsPartialSuccess>,
}

/// `ExportMetricsPartialSuccess`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportMetricsPartialSuccess {
    /// Data points refused.
    #[prost(int64, tag = "1")]
    pub rejected_data_points: i64,
    /// Why.
    #[prost(string, tag = "2")]
    pub error_message: String,
}

/// `google.rpc.Status`: a refusal's body (its `details` are not read).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Status {
    /// A gRPC code (OTLP/HTTP may leave it out).
    #[prost(int32, tag = "1")]
    pub code: i32,
    /// The message.
    #[prost(string, tag = "2")]
    pub message: String,
}

/// `ResourceMetrics`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceMetrics {
    /// Who sends.
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    /// The metrics, by instrumentation scope.
    #[prost(message, repeated, tag = "2")]
    pub scope_metrics: Vec<ScopeMetrics>,
}

/// `Resource`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Resource {
    /// Its attributes.
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

/// `ScopeMetrics`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopeMetrics {
    /// What made the metrics.
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    /// The metrics.
    #[prost(message, repeated, tag = "2")]
    pub metrics: Vec<Metric>,
}

/// `InstrumentationScope`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InstrumentationScope {
    /// Its name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Its version.
    #[prost(string, tag = "2")]
    pub version: String,
}

/// `KeyValue`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    /// The key.
    #[prost(string, tag = "1")]
    pub key: String,
    /// The value.
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// `AnyValue` (strings only: all volley sends).
#[derive(Clone, PartialEq, prost::Message)]
pub struct AnyValue {
    /// The string.
    #[prost(string, optional, tag = "1")]
    pub string_value: Option<String>,
}

/// `Metric`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Metric {
    /// The name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// What it is.
    #[prost(string, tag = "2")]
    pub description: String,
    /// Its unit (UCUM: `s`, `By`).
    #[prost(string, tag = "3")]
    pub unit: String,
    /// Its points.
    #[prost(oneof = "Data", tags = "5, 7, 10")]
    pub data: Option<Data>,
}

/// `Metric.data`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Data {
    /// `Gauge`.
    #[prost(message, tag = "5")]
    Gauge(Gauge),
    /// `Sum`.
    #[prost(message, tag = "7")]
    Sum(Sum),
    /// `ExponentialHistogram`.
    #[prost(message, tag = "10")]
    ExponentialHistogram(ExponentialHistogram),
}

/// `AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE`.
pub const CUMULATIVE: i32 = 2;

/// `Gauge`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Gauge {
    /// Its points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
}

/// `Sum`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sum {
    /// Its points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
    /// [`CUMULATIVE`].
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
    /// A counter's.
    #[prost(bool, tag = "3")]
    pub is_monotonic: bool,
}

/// `NumberDataPoint` (doubles only).
#[derive(Clone, PartialEq, prost::Message)]
pub struct NumberDataPoint {
    /// Its attributes.
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
    /// When a cumulative point started counting, ns since the Unix epoch.
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    /// When it was taken, likewise.
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    /// The value.
    #[prost(double, optional, tag = "4")]
    pub as_double: Option<f64>,
}

/// `ExponentialHistogram`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExponentialHistogram {
    /// Its points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<ExponentialHistogramDataPoint>,
    /// [`CUMULATIVE`].
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
}

/// `ExponentialHistogramDataPoint`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExponentialHistogramDataPoint {
    /// Its attributes.
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
    /// When it started counting, ns since the Unix epoch.
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    /// When it was taken, likewise.
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    /// Observations.
    #[prost(fixed64, tag = "4")]
    pub count: u64,
    /// Their sum.
    #[prost(double, optional, tag = "5")]
    pub sum: Option<f64>,
    /// Buckets per power of two: 2^scale; bucket i is (base^i, base^(i+1)].
    #[prost(sint32, tag = "6")]
    pub scale: i32,
    /// Observations of zero.
    #[prost(fixed64, tag = "7")]
    pub zero_count: u64,
    /// The positive buckets.
    #[prost(message, optional, tag = "8")]
    pub positive: Option<Buckets>,
    /// The smallest observation.
    #[prost(double, optional, tag = "12")]
    pub min: Option<f64>,
    /// The largest.
    #[prost(double, optional, tag = "13")]
    pub max: Option<f64>,
    /// Observations at most this far from 0 are in the zero bucket.
    #[prost(double, tag = "14")]
    pub zero_threshold: f64,
}

/// `ExponentialHistogramDataPoint.Buckets`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Buckets {
    /// The first bucket's index.
    #[prost(sint32, tag = "1")]
    pub offset: i32,
    /// The counts of consecutive buckets from it.
    #[prost(uint64, repeated, tag = "2")]
    pub bucket_counts: Vec<u64>,
}
