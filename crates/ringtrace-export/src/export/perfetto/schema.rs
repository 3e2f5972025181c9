//! The field numbers and enum values of Perfetto's trace protos
//! (`protos/perfetto/trace/...`) that the exporter writes, by message.

/// `Trace`.
pub mod trace {
    pub const PACKET: u32 = 1;
}

/// `TracePacket`.
pub mod packet {
    pub const CLOCK_SNAPSHOT: u32 = 6;
    pub const TIMESTAMP: u32 = 8;
    pub const SEQUENCE_ID: u32 = 10;
    pub const TRACK_EVENT: u32 = 11;
    pub const INTERNED_DATA: u32 = 12;
    pub const SEQUENCE_FLAGS: u32 = 13;
    pub const TIMESTAMP_CLOCK_ID: u32 = 58;
    pub const DEFAULTS: u32 = 59;
    pub const TRACK_DESCRIPTOR: u32 = 60;
    pub const FIRST_ON_SEQUENCE: u32 = 87;
    /// `SequenceFlags`: `SEQ_INCREMENTAL_STATE_CLEARED`.
    pub const STATE_CLEARED: u64 = 1;
    /// `SequenceFlags`: `SEQ_NEEDS_INCREMENTAL_STATE`.
    pub const NEEDS_STATE: u64 = 2;
}

/// `TracePacketDefaults` and `TrackEventDefaults`.
pub mod defaults {
    pub const TIMESTAMP_CLOCK_ID: u32 = 58;
    pub const TRACK_EVENT: u32 = 11;
    pub const TRACK_UUID: u32 = 11;
}

/// `ClockSnapshot` and its `Clock`.
pub mod snapshot {
    pub const CLOCKS: u32 = 1;
    pub const PRIMARY: u32 = 2;
    pub const CLOCK_ID: u32 = 1;
    pub const CLOCK_TIMESTAMP: u32 = 2;
    pub const IS_INCREMENTAL: u32 = 3;
}

/// `BuiltinClock` values, and the sequence-scoped clocks (64 to 127) of
/// the trace's time.
pub mod clock {
    pub const REALTIME: u32 = 1;
    pub const MONOTONIC: u32 = 3;
    pub const MONOTONIC_RAW: u32 = 5;
    pub const BOOTTIME: u32 = 6;
    /// The trace's clock in ns, absolute.
    pub const TRACE: u32 = 64;
    /// The same clock, each packet's timestamp the ns since the previous
    /// packet's on this clock.
    pub const TRACE_DELTA: u32 = 65;
}

/// `TrackEvent` and its `Type`.
pub mod event {
    pub const CATEGORY_IIDS: u32 = 3;
    pub const DEBUG_ANNOTATIONS: u32 = 4;
    pub const TYPE: u32 = 9;
    pub const NAME_IID: u32 = 10;
    pub const TRACK_UUID: u32 = 11;
    pub const COUNTER_VALUE: u32 = 30;
    pub const DOUBLE_COUNTER_VALUE: u32 = 44;
    pub const FLOW_IDS: u32 = 47;
    pub const TERMINATING_FLOW_IDS: u32 = 48;
    pub const SLICE_BEGIN: u64 = 1;
    pub const SLICE_END: u64 = 2;
    pub const INSTANT: u64 = 3;
    pub const COUNTER: u64 = 4;
}

/// `TrackDescriptor`, `ProcessDescriptor`, `ThreadDescriptor`,
/// `CounterDescriptor`.
pub mod track {
    pub const UUID: u32 = 1;
    pub const NAME: u32 = 2;
    pub const PROCESS: u32 = 3;
    pub const THREAD: u32 = 4;
    pub const PARENT_UUID: u32 = 5;
    pub const COUNTER: u32 = 8;
    pub const PROCESS_PID: u32 = 1;
    pub const PROCESS_NAME: u32 = 6;
    pub const THREAD_PID: u32 = 1;
    pub const THREAD_TID: u32 = 2;
    pub const THREAD_NAME: u32 = 5;
}

/// `DebugAnnotation`.
pub mod annotation {
    pub const NAME_IID: u32 = 1;
    pub const BOOL: u32 = 2;
    pub const UINT: u32 = 3;
    pub const INT: u32 = 4;
    pub const DOUBLE: u32 = 5;
    pub const STRING: u32 = 6;
    pub const STRING_IID: u32 = 17;
    pub const DICT_ENTRIES: u32 = 11;
}

/// `InternedData` entries (`EventCategory`, `EventName`,
/// `DebugAnnotationName`, `InternedString`): an iid and a name (a
/// string's bytes).
pub mod interned {
    pub const IID: u32 = 1;
    pub const NAME: u32 = 2;
}
