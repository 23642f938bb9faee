"""The TensorFlow protobuf messages xocview reads, in a small subset of proto syntax.

TensorFlow's own ``*_pb2`` modules come only with TensorFlow, so the messages are declared
here by their field names and numbers (the wire facts of the format) and built at run time
by ``protos``. Messages are flattened to top-level names of ours; neither the binary nor the
text format carries message names. The syntax is proto2 so that every singular field has
presence (an ``AttrValue`` whose ``i`` is 0 is told from one that holds nothing).
"""

from __future__ import annotations

__all__ = ["DATA_TYPES", "SCHEMA"]

# tensorflow/core/framework/types.proto; a reference type is its value plus 100.
_BASE_TYPES = {
    "DT_INVALID": 0,
    "DT_FLOAT": 1,
    "DT_DOUBLE": 2,
    "DT_INT32": 3,
    "DT_UINT8": 4,
    "DT_INT16": 5,
    "DT_INT8": 6,
    "DT_STRING": 7,
    "DT_COMPLEX64": 8,
    "DT_INT64": 9,
    "DT_BOOL": 10,
    "DT_QINT8": 11,
    "DT_QUINT8": 12,
    "DT_QINT32": 13,
    "DT_BFLOAT16": 14,
    "DT_QINT16": 15,
    "DT_QUINT16": 16,
    "DT_UINT16": 17,
    "DT_COMPLEX128": 18,
    "DT_HALF": 19,
    "DT_RESOURCE": 20,
    "DT_VARIANT": 21,
    "DT_UINT32": 22,
    "DT_UINT64": 23,
    "DT_FLOAT8_E5M2": 24,
    "DT_FLOAT8_E4M3FN": 25,
    "DT_FLOAT8_E4M3FNUZ": 26,
    "DT_FLOAT8_E4M3B11FNUZ": 27,
    "DT_FLOAT8_E5M2FNUZ": 28,
    "DT_INT4": 29,
    "DT_UINT4": 30,
    "DT_INT2": 31,
    "DT_UINT2": 32,
    "DT_FLOAT4_E2M1FN": 33,
}
DATA_TYPES: dict[str, int] = {
    **_BASE_TYPES,
    **{f"{k}_REF": v + 100 for k, v in _BASE_TYPES.items() if v},
}

SCHEMA = """
message TensorShapeProto {
  repeated Dim dim = 2;
  optional bool unknown_rank = 3;
}
message Dim {
  optional int64 size = 1;
  optional string name = 2;
}
message TensorProto {
  optional DataType dtype = 1;
  optional TensorShapeProto tensor_shape = 2;
  optional int32 version_number = 3;
  optional bytes tensor_content = 4;
  repeated int32 half_val = 13;
  repeated float float_val = 5;
  repeated double double_val = 6;
  repeated int32 int_val = 7;
  repeated bytes string_val = 8;
  repeated float scomplex_val = 9;
  repeated int64 int64_val = 10;
  repeated bool bool_val = 11;
  repeated double dcomplex_val = 12;
  repeated ResourceHandleProto resource_handle_val = 14;
  repeated uint32 uint32_val = 16;
  repeated uint64 uint64_val = 17;
}
message ResourceHandleProto {
  optional string device = 1;
  optional string container = 2;
  optional string name = 3;
  optional uint64 hash_code = 4;
  optional string maybe_type_name = 5;
}
message AttrValue {
  oneof value {
    bytes s = 2;
    int64 i = 3;
    float f = 4;
    bool b = 5;
    DataType type = 6;
    TensorShapeProto shape = 7;
    TensorProto tensor = 8;
    ListValue list = 1;
    string placeholder = 9;
    NameAttrList func = 10;
  }
}
message ListValue {
  repeated bytes s = 2;
  repeated int64 i = 3;
  repeated float f = 4;
  repeated bool b = 5;
  repeated DataType type = 6;
  repeated TensorShapeProto shape = 7;
  repeated TensorProto tensor = 8;
  repeated NameAttrList func = 9;
}
message NameAttrList {
  optional string name = 1;
  map<string, AttrValue> attr = 2;
}
message NodeDef {
  optional string name = 1;
  optional string op = 2;
  repeated string input = 3;
  optional string device = 4;
  map<string, AttrValue> attr = 5;
  optional ExperimentalDebugInfo experimental_debug_info = 6;
}
message ExperimentalDebugInfo {
  repeated string original_node_names = 1;
  repeated string original_func_names = 2;
}
message VersionDef {
  optional int32 producer = 1;
  optional int32 min_consumer = 2;
  repeated int32 bad_consumers = 3;
}
message GraphDef {
  repeated NodeDef node = 1;
  optional VersionDef versions = 4;
  optional int32 version = 3;
  optional FunctionDefLibrary library = 2;
}
message FunctionDefLibrary {
  repeated FunctionDef function = 1;
  repeated GradientDef gradient = 2;
}
message GradientDef {
  optional string function_name = 1;
  optional string gradient_func = 2;
}
message FunctionDef {
  optional OpDef signature = 1;
  map<string, AttrValue> attr = 5;
  repeated NodeDef node_def = 3;
  map<string, string> ret = 4;
  map<string, string> control_ret = 6;
}
message OpDef {
  optional string name = 1;
  repeated ArgDef input_arg = 2;
  repeated ArgDef output_arg = 3;
  repeated string control_output = 20;
  repeated AttrDef attr = 4;
  optional string summary = 5;
  optional string description = 6;
  optional bool is_stateful = 17;
}
message ArgDef {
  optional string name = 1;
  optional string description = 2;
  optional DataType type = 3;
  optional string type_attr = 4;
  optional string number_attr = 5;
  optional string type_list_attr = 6;
  optional bool is_ref = 16;
}
message AttrDef {
  optional string name = 1;
  optional string type = 2;
  optional AttrValue default_value = 3;
  optional string description = 4;
}
message SavedModel {
  optional int64 saved_model_schema_version = 1;
  repeated MetaGraphDef meta_graphs = 2;
}
message MetaGraphDef {
  optional MetaInfoDef meta_info_def = 1;
  optional GraphDef graph_def = 2;
  map<string, SignatureDef> signature_def = 5;
  optional SavedObjectGraph object_graph_def = 7;
}
message MetaInfoDef {
  optional string meta_graph_version = 1;
  repeated string tags = 4;
  optional string tensorflow_version = 5;
  optional string tensorflow_git_version = 6;
  optional bool stripped_default_attrs = 7;
  map<string, string> function_aliases = 8;
}
message SignatureDef {
  map<string, TensorInfo> inputs = 1;
  map<string, TensorInfo> outputs = 2;
  optional string method_name = 3;
}
message TensorInfo {
  optional string name = 1;
  optional DataType dtype = 2;
  optional TensorShapeProto tensor_shape = 3;
}
message SavedObjectGraph {
  repeated SavedObject nodes = 1;
  map<string, SavedConcreteFunction> concrete_functions = 2;
}
message SavedObject {
  repeated ObjectReference children = 1;
  repeated ObjectReference dependencies = 15;
  oneof kind {
    SavedUserObject user_object = 4;
    SavedAsset asset = 5;
    SavedFunction function = 6;
    SavedVariable variable = 7;
    SavedBareConcreteFunction bare_concrete_function = 8;
    SavedConstant constant = 9;
    SavedResource resource = 10;
    CapturedTensor captured_tensor = 12;
  }
  optional string registered_name = 13;
}
message ObjectReference {
  optional int32 node_id = 1;
  optional string local_name = 2;
}
message SavedUserObject {
  optional string identifier = 1;
  optional VersionDef version = 2;
  optional string metadata = 3;
}
message SavedAsset {
  optional int32 asset_file_def_index = 1;
}
message SavedFunction {
  repeated string concrete_functions = 1;
}
message SavedVariable {
  optional DataType dtype = 1;
  optional TensorShapeProto shape = 2;
  optional bool trainable = 3;
  optional string name = 6;
  optional string device = 7;
}
message SavedBareConcreteFunction {
  optional string concrete_function_name = 1;
  repeated string argument_keywords = 2;
  optional int64 allowed_positional_arguments = 3;
}
message SavedConstant {
  optional string operation = 1;
}
message SavedResource {
  optional string device = 1;
}
message CapturedTensor {
  optional string name = 1;
  optional string concrete_function = 2;
}
message SavedConcreteFunction {
  repeated int32 bound_inputs = 2;
}
message TrackableObjectGraph {
  repeated TrackableObject nodes = 1;
}
message TrackableObject {
  repeated ObjectReference children = 1;
  repeated SerializedTensor attributes = 2;
  repeated SlotVariableReference slot_variables = 3;
}
message SerializedTensor {
  optional string name = 1;
  optional string full_name = 2;
  optional string checkpoint_key = 3;
}
message SlotVariableReference {
  optional int32 original_variable_node_id = 1;
  optional string slot_name = 2;
  optional int32 slot_variable_node_id = 3;
}
message BundleHeaderProto {
  optional int32 num_shards = 1;
  optional Endianness endianness = 2;
  optional VersionDef version = 3;
}
message BundleEntryProto {
  optional DataType dtype = 1;
  optional TensorShapeProto shape = 2;
  optional int32 shard_id = 3;
  optional int64 offset = 4;
  optional int64 size = 5;
  optional fixed32 crc32c = 6;
  repeated TensorSliceProto slices = 7;
}
message TensorSliceProto {
  repeated Extent extent = 1;
}
message Extent {
  optional int64 start = 1;
  optional int64 length = 2;
}
"""
