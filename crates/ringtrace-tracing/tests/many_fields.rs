//! Events with many fields: every field up to a record's 128th is kept,
//! and those past it, or past their callsite's 256th (a record names a
//! field by one byte), are left out and counted, never silently.
#![recursion_limit = "1024"]

mod common;

use common::dump_json;
use ringtrace_tracing::{LayerStats, RingLayer};
use serde_json::Value;
use tracing::field::Empty;
use tracing_subscriber::layer::SubscriberExt;

/// What `f` records through a layer: the records, and the layer's counts.
fn recorded(f: impl FnOnce()) -> (Vec<Value>, LayerStats) {
    let ring = common::ring();
    let layer = RingLayer::new(ring.clone());
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer.clone()), f);
    (dump_json(&ring), layer.stats())
}

#[test]
fn fields_up_to_the_128th_are_kept_and_those_past_it_counted() {
    #[rustfmt::skip]
    let (json, stats) = recorded(|| {
        tracing::info!(
            g000 = 0u64, g001 = 1u64, g002 = 2u64, g003 = 3u64, g004 = 4u64, g005 = 5u64,
            g006 = 6u64, g007 = 7u64, g008 = 8u64, g009 = 9u64, g010 = 10u64, g011 = 11u64,
            g012 = 12u64, g013 = 13u64, g014 = 14u64, g015 = 15u64, g016 = 16u64, g017 = 17u64,
            g018 = 18u64, g019 = 19u64, g020 = 20u64, g021 = 21u64, g022 = 22u64, g023 = 23u64,
            g024 = 24u64, g025 = 25u64, g026 = 26u64, g027 = 27u64, g028 = 28u64, g029 = 29u64,
            g030 = 30u64, g031 = 31u64, g032 = 32u64, g033 = 33u64, g034 = 34u64, g035 = 35u64,
            g036 = 36u64, g037 = 37u64, g038 = 38u64, g039 = 39u64, g040 = 40u64, g041 = 41u64,
            g042 = 42u64, g043 = 43u64, g044 = 44u64, g045 = 45u64, g046 = 46u64, g047 = 47u64,
            g048 = 48u64, g049 = 49u64, g050 = 50u64, g051 = 51u64, g052 = 52u64, g053 = 53u64,
            g054 = 54u64, g055 = 55u64, g056 = 56u64, g057 = 57u64, g058 = 58u64, g059 = 59u64,
            g060 = 60u64, g061 = 61u64, g062 = 62u64, g063 = 63u64, g064 = 64u64, g065 = 65u64,
            g066 = 66u64, g067 = 67u64, g068 = 68u64, g069 = 69u64, g070 = 70u64, g071 = 71u64,
            g072 = 72u64, g073 = 73u64, g074 = 74u64, g075 = 75u64, g076 = 76u64, g077 = 77u64,
            g078 = 78u64, g079 = 79u64, g080 = 80u64, g081 = 81u64, g082 = 82u64, g083 = 83u64,
            g084 = 84u64, g085 = 85u64, g086 = 86u64, g087 = 87u64, g088 = 88u64, g089 = 89u64,
            g090 = 90u64, g091 = 91u64, g092 = 92u64, g093 = 93u64, g094 = 94u64, g095 = 95u64,
            g096 = 96u64, g097 = 97u64, g098 = 98u64, g099 = 99u64, g100 = 100u64, g101 = 101u64,
            g102 = 102u64, g103 = 103u64, g104 = 104u64, g105 = 105u64, g106 = 106u64, g107 = 107u64,
            g108 = 108u64, g109 = 109u64, g110 = 110u64, g111 = 111u64, g112 = 112u64, g113 = 113u64,
            g114 = 114u64, g115 = 115u64, g116 = 116u64, g117 = 117u64, g118 = 118u64, g119 = 119u64,
            g120 = 120u64, g121 = 121u64, g122 = 122u64, g123 = 123u64, g124 = 124u64, g125 = 125u64,
            g126 = 126u64, g127 = 127u64, g128 = 128u64, g129 = 129u64,
        );
    });
    for i in 0..128u64 {
        assert_eq!(json[0]["fields"][format!("g{i:03}")], i, "{}", json[0]);
    }
    assert!(json[0]["fields"].get("g128").is_none(), "{}", json[0]);
    assert_eq!((stats.recorded, stats.fields_dropped), (1, 2));
}

#[test]
fn a_field_past_its_callsites_256th_is_left_out_and_counted() {
    #[rustfmt::skip]
    let (json, stats) = recorded(|| {
        let span = tracing::info_span!(
            "wide",
            h000 = Empty, h001 = Empty, h002 = Empty, h003 = Empty, h004 = Empty, h005 = Empty, h006 = Empty, h007 = Empty,
            h008 = Empty, h009 = Empty, h010 = Empty, h011 = Empty, h012 = Empty, h013 = Empty, h014 = Empty, h015 = Empty,
            h016 = Empty, h017 = Empty, h018 = Empty, h019 = Empty, h020 = Empty, h021 = Empty, h022 = Empty, h023 = Empty,
            h024 = Empty, h025 = Empty, h026 = Empty, h027 = Empty, h028 = Empty, h029 = Empty, h030 = Empty, h031 = Empty,
            h032 = Empty, h033 = Empty, h034 = Empty, h035 = Empty, h036 = Empty, h037 = Empty, h038 = Empty, h039 = Empty,
            h040 = Empty, h041 = Empty, h042 = Empty, h043 = Empty, h044 = Empty, h045 = Empty, h046 = Empty, h047 = Empty,
            h048 = Empty, h049 = Empty, h050 = Empty, h051 = Empty, h052 = Empty, h053 = Empty, h054 = Empty, h055 = Empty,
            h056 = Empty, h057 = Empty, h058 = Empty, h059 = Empty, h060 = Empty, h061 = Empty, h062 = Empty, h063 = Empty,
            h064 = Empty, h065 = Empty, h066 = Empty, h067 = Empty, h068 = Empty, h069 = Empty, h070 = Empty, h071 = Empty,
            h072 = Empty, h073 = Empty, h074 = Empty, h075 = Empty, h076 = Empty, h077 = Empty, h078 = Empty, h079 = Empty,
            h080 = Empty, h081 = Empty, h082 = Empty, h083 = Empty, h084 = Empty, h085 = Empty, h086 = Empty, h087 = Empty,
            h088 = Empty, h089 = Empty, h090 = Empty, h091 = Empty, h092 = Empty, h093 = Empty, h094 = Empty, h095 = Empty,
            h096 = Empty, h097 = Empty, h098 = Empty, h099 = Empty, h100 = Empty, h101 = Empty, h102 = Empty, h103 = Empty,
            h104 = Empty, h105 = Empty, h106 = Empty, h107 = Empty, h108 = Empty, h109 = Empty, h110 = Empty, h111 = Empty,
            h112 = Empty, h113 = Empty, h114 = Empty, h115 = Empty, h116 = Empty, h117 = Empty, h118 = Empty, h119 = Empty,
            h120 = Empty, h121 = Empty, h122 = Empty, h123 = Empty, h124 = Empty, h125 = Empty, h126 = Empty, h127 = Empty,
            h128 = Empty, h129 = Empty, h130 = Empty, h131 = Empty, h132 = Empty, h133 = Empty, h134 = Empty, h135 = Empty,
            h136 = Empty, h137 = Empty, h138 = Empty, h139 = Empty, h140 = Empty, h141 = Empty, h142 = Empty, h143 = Empty,
            h144 = Empty, h145 = Empty, h146 = Empty, h147 = Empty, h148 = Empty, h149 = Empty, h150 = Empty, h151 = Empty,
            h152 = Empty, h153 = Empty, h154 = Empty, h155 = Empty, h156 = Empty, h157 = Empty, h158 = Empty, h159 = Empty,
            h160 = Empty, h161 = Empty, h162 = Empty, h163 = Empty, h164 = Empty, h165 = Empty, h166 = Empty, h167 = Empty,
            h168 = Empty, h169 = Empty, h170 = Empty, h171 = Empty, h172 = Empty, h173 = Empty, h174 = Empty, h175 = Empty,
            h176 = Empty, h177 = Empty, h178 = Empty, h179 = Empty, h180 = Empty, h181 = Empty, h182 = Empty, h183 = Empty,
            h184 = Empty, h185 = Empty, h186 = Empty, h187 = Empty, h188 = Empty, h189 = Empty, h190 = Empty, h191 = Empty,
            h192 = Empty, h193 = Empty, h194 = Empty, h195 = Empty, h196 = Empty, h197 = Empty, h198 = Empty, h199 = Empty,
            h200 = Empty, h201 = Empty, h202 = Empty, h203 = Empty, h204 = Empty, h205 = Empty, h206 = Empty, h207 = Empty,
            h208 = Empty, h209 = Empty, h210 = Empty, h211 = Empty, h212 = Empty, h213 = Empty, h214 = Empty, h215 = Empty,
            h216 = Empty, h217 = Empty, h218 = Empty, h219 = Empty, h220 = Empty, h221 = Empty, h222 = Empty, h223 = Empty,
            h224 = Empty, h225 = Empty, h226 = Empty, h227 = Empty, h228 = Empty, h229 = Empty, h230 = Empty, h231 = Empty,
            h232 = Empty, h233 = Empty, h234 = Empty, h235 = Empty, h236 = Empty, h237 = Empty, h238 = Empty, h239 = Empty,
            h240 = Empty, h241 = Empty, h242 = Empty, h243 = Empty, h244 = Empty, h245 = Empty, h246 = Empty, h247 = Empty,
            h248 = Empty, h249 = Empty, h250 = Empty, h251 = Empty, h252 = Empty, h253 = Empty, h254 = Empty, h255 = Empty,
            h256 = Empty, last = 7u64,
        );
        span.record("h000", 1u64);
    });
    let new = json
        .iter()
        .find(|r| r["event"] == "tracing:span_new")
        .expect("a new span record");
    // Recorded under no other field's name.
    assert!(
        new["fields"].as_object().is_none_or(|f| f.is_empty()),
        "{new}"
    );
    let record = json
        .iter()
        .find(|r| r["event"] == "tracing:span_record")
        .expect("a span record");
    assert_eq!(record["fields"]["h000"], 1, "{record}");
    assert_eq!(stats.fields_dropped, 1);
}
