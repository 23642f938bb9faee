"""ATen operator schemas as torch prints them, for binding TorchScript's calls by name.

TorchScript code calls ``torch.conv2d(input, weight, bias, [1, 1], ...)`` positionally; the
lowering table (``aten_onnx``) reads arguments by their schema names (``stride``). Each line
below is one overload (``name.overload(args) -> returns``, ``-> Tensor`` left out); an op's
overloads are tried in order and the first whose argument kinds fit the call's values is
taken (``add.Tensor`` for a tensor ``other``, ``add.Scalar`` for a number). ``FACTORY`` and
``MEMFMT`` stand for the keyword arguments factories and copies share; a long line goes on
in the next, indented. Ops on plain numbers
(``aten::add.int``) are not here: the walk folds them. The list is read once, on first use.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache

__all__ = ["Param", "Schema", "schemas"]

_FACTORY = "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None"
_MEMFMT = "MemoryFormat? memory_format=None"


@dataclass(frozen=True, slots=True)
class Param:
    """One argument: its name, type as torch writes it, whether it has a default (and
    which), and whether it can only be given by keyword."""

    name: str
    type: str
    has_default: bool
    default: object
    keyword_only: bool


@dataclass(frozen=True, slots=True)
class Schema:
    name: str
    overload: str
    params: tuple[Param, ...]
    returns: tuple[str, ...]  # the types of the outputs (``Tensor[]`` for a list)


@cache
def schemas() -> dict[str, list[Schema]]:
    """Every op's overloads in the order they are tried."""
    found: dict[str, list[Schema]] = {}
    for line in _TABLE.replace(",\n    ", ", ").strip().splitlines():
        s = _parse(line.replace("FACTORY", _FACTORY).replace("MEMFMT", _MEMFMT))
        found.setdefault(s.name, []).append(s)
    return found


def _parse(line: str) -> Schema:
    head, _, rest = line.partition("(")
    close = _closing(rest)
    body, returns = rest[:close], rest[close + 1 :]
    name, _, overload = head.partition(".")
    params: list[Param] = []
    keyword_only = False
    for item in _split(body):
        if item == "*":
            keyword_only = True
            continue
        decl, eq, default = item.partition("=")
        kind, _, pname = decl.strip().rpartition(" ")
        value = _default(default) if eq else None
        params.append(Param(pname, kind, bool(eq), value, keyword_only))
    out = returns.replace("->", "").strip() or "Tensor"
    outs = tuple(o.strip().split(" ")[0] for o in _split(out.strip("()")))
    return Schema(name, overload, tuple(params), outs)


def _closing(text: str) -> int:
    """Where the bracket opened just before ``text`` closes."""
    depth = 1
    for k, c in enumerate(text):
        depth += (c in "[(") - (c in ")]")
        if depth == 0:
            return k
    raise ValueError(text)


def _split(text: str) -> list[str]:
    """Split at commas outside brackets."""
    parts, depth, start = [], 0, 0
    for k, c in enumerate(text):
        if c in "[(":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            parts.append(text[start:k].strip())
            start = k + 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


def _default(text: str) -> object:
    text = text.strip()
    if text in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[text]
    return ast.literal_eval(text)


_TABLE = """
Bool.Tensor(Tensor a) -> bool
Float.Tensor(Tensor a) -> float
Int.Tensor(Tensor a) -> int
ScalarImplicit(Tensor a) -> Scalar
__and__.Scalar(Tensor self, Scalar other)
__and__.Tensor(Tensor self, Tensor other)
__or__.Tensor(Tensor self, Tensor other)
__or__.Scalar(Tensor self, Scalar other)
_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size)
_convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding,
    SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, bool benchmark,
    bool deterministic, bool cudnn_enabled, bool allow_tf32)
_log_softmax(Tensor self, int dim, bool half_to_float)
_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias,
    Tensor running_mean, Tensor running_var, float momentum, float eps) -> (Tensor, Tensor,
    Tensor)
_softmax(Tensor self, int dim, bool half_to_float)
_to_copy(Tensor self, *, FACTORY, bool non_blocking=False, MEMFMT)
_unsafe_view(Tensor self, SymInt[] size)
abs(Tensor self)
adaptive_avg_pool1d(Tensor self, int[1] output_size)
adaptive_avg_pool2d(Tensor self, SymInt[2] output_size)
add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1)
add.Scalar(Tensor self, Scalar other, Scalar alpha=1)
add_.Tensor(Tensor self, Tensor other, *, Scalar alpha=1)
add_.Scalar(Tensor self, Scalar other, Scalar alpha=1)
addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1)
addmm.dtype(Tensor self, Tensor mat1, Tensor mat2, ScalarType out_dtype, *, Scalar beta=1,
    Scalar alpha=1)
adjoint(Tensor self)
alias(Tensor self)
all(Tensor self)
all.dim(Tensor self, int dim, bool keepdim=False)
all.dims(Tensor self, int[]? dim=None, bool keepdim=False)
alpha_dropout(Tensor input, float p, bool train)
amax(Tensor self, int[1] dim=[], bool keepdim=False)
amin(Tensor self, int[1] dim=[], bool keepdim=False)
any(Tensor self)
any.dim(Tensor self, int dim, bool keepdim=False)
any.dims(Tensor self, int[]? dim=None, bool keepdim=False)
arange(Scalar end, *, FACTORY)
arange.start(Scalar start, Scalar end, *, FACTORY)
arange.start_step(Scalar start, Scalar end, Scalar step=1, *, FACTORY)
argmax(Tensor self, int? dim=None, bool keepdim=False)
argmin(Tensor self, int? dim=None, bool keepdim=False)
avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0],
    bool ceil_mode=False, bool count_include_pad=True)
avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0,
    bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None)
avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0,
    bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None)
baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1)
baddbmm.dtype(Tensor self, Tensor batch1, Tensor batch2, ScalarType out_dtype, *,
    Scalar beta=1, Scalar alpha=1)
batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean,
    Tensor? running_var, bool training, float momentum, float eps, bool cudnn_enabled)
bitwise_and.Tensor(Tensor self, Tensor other)
bitwise_and.Scalar(Tensor self, Scalar other)
bitwise_and.Scalar_Tensor(Scalar self, Tensor other)
bitwise_not(Tensor self)
bitwise_or.Tensor(Tensor self, Tensor other)
bitwise_or.Scalar(Tensor self, Scalar other)
bitwise_or.Scalar_Tensor(Scalar self, Tensor other)
bitwise_xor.Tensor(Tensor self, Tensor other)
bitwise_xor.Scalar(Tensor self, Scalar other)
bitwise_xor.Scalar_Tensor(Scalar self, Tensor other)
bmm(Tensor self, Tensor mat2)
bmm.dtype(Tensor self, Tensor mat2, ScalarType out_dtype)
broadcast_to(Tensor self, SymInt[] size)
cat(Tensor[] tensors, int dim=0)
ceil(Tensor self)
chunk(Tensor self, int chunks, int dim=0) -> Tensor[]
clamp(Tensor self, Scalar? min=None, Scalar? max=None)
clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None)
clamp_(Tensor self, Scalar? min=None, Scalar? max=None)
clamp_.Tensor(Tensor self, Tensor? min=None, Tensor? max=None)
clamp_max(Tensor self, Scalar max)
clamp_max.Tensor(Tensor self, Tensor max)
clamp_min(Tensor self, Scalar min)
clamp_min.Tensor(Tensor self, Tensor min)
clip(Tensor self, Scalar? min=None, Scalar? max=None)
clip.Tensor(Tensor self, Tensor? min=None, Tensor? max=None)
clone(Tensor self, *, MEMFMT)
concat(Tensor[] tensors, int dim=0)
constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0)
contiguous(Tensor self, *, MemoryFormat memory_format=0)
conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1],
    SymInt[1] padding=[0], SymInt[1] dilation=[1], SymInt groups=1)
conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1],
    str padding="valid", SymInt[1] dilation=[1], SymInt groups=1)
conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1],
    SymInt[2] padding=[0, 0], SymInt[2] dilation=[1, 1], SymInt groups=1)
conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1],
    str padding="valid", SymInt[2] dilation=[1, 1], SymInt groups=1)
conv3d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1],
    SymInt[3] padding=[0, 0, 0], SymInt[3] dilation=[1, 1, 1], SymInt groups=1)
conv3d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1],
    str padding="valid", SymInt[3] dilation=[1, 1, 1], SymInt groups=1)
conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1],
    SymInt[1] padding=[0], SymInt[1] output_padding=[0], SymInt groups=1,
    SymInt[1] dilation=[1])
conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1],
    SymInt[2] padding=[0, 0], SymInt[2] output_padding=[0, 0], SymInt groups=1,
    SymInt[2] dilation=[1, 1])
conv_transpose3d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1,
    1], SymInt[3] padding=[0, 0, 0], SymInt[3] output_padding=[0, 0, 0], SymInt groups=1,
    SymInt[3] dilation=[1, 1, 1])
convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding,
    SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups)
copy_(Tensor self, Tensor src, bool non_blocking=False)
copy_.Tensor(Tensor self, Tensor other)
copy_.int(Tensor self, int other)
copy_.float(Tensor self, float other)
cos(Tensor self)
cumsum(Tensor self, int dim, *, ScalarType? dtype=None)
detach(Tensor self)
diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None)
div.Tensor(Tensor self, Tensor other)
div.Scalar(Tensor self, Scalar other)
div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode)
div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode)
div_.Tensor(Tensor self, Tensor other)
div_.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode)
div_.Scalar(Tensor self, Scalar other)
div_.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode)
dropout(Tensor input, float p, bool train)
einsum(str equation, Tensor[] tensors, *, int[]? path=None)
elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1)
embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False,
    bool sparse=False)
empty.memory_format(SymInt[] size, *, FACTORY, MEMFMT)
empty_like(Tensor self, *, FACTORY, MEMFMT)
eq.Tensor(Tensor self, Tensor other)
eq.Scalar(Tensor self, Scalar other)
eq.Tensor_list(Tensor[] a, Tensor[] b) -> bool
erf(Tensor self)
exp(Tensor self)
expand(Tensor self, SymInt[] size, *, bool implicit=False)
expand_as(Tensor self, Tensor other)
expm1(Tensor self)
feature_dropout(Tensor input, float p, bool train)
fill_.Scalar(Tensor self, Scalar value)
fill_.Tensor(Tensor self, Tensor value)
flatten.using_ints(Tensor self, int start_dim=0, int end_dim=-1)
flip(Tensor self, int[] dims)
floor(Tensor self)
floor_divide(Tensor self, Tensor other)
floor_divide.Scalar(Tensor self, Scalar other)
fmod.Tensor(Tensor self, Tensor other)
fmod.Scalar(Tensor self, Scalar other)
full(SymInt[] size, Scalar fill_value, *, FACTORY)
full_like(Tensor self, Scalar fill_value, *, FACTORY, MEMFMT)
gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False)
ge.Tensor(Tensor self, Tensor other)
ge.Scalar(Tensor self, Scalar other)
gelu(Tensor self, *, str approximate="none")
gelu_(Tensor self, *, str approximate="none")
group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None,
    float eps=1.0000000000000001e-05, bool cudnn_enabled=True)
gru.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers,
    float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)
gt.Tensor(Tensor self, Tensor other)
gt.Scalar(Tensor self, Scalar other)
hardsigmoid(Tensor self)
hardswish(Tensor self)
hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1)
hardtanh_(Tensor self, Scalar min_val=-1, Scalar max_val=1)
index.Tensor(Tensor self, Tensor?[] indices)
index_select(Tensor self, int dim, Tensor index)
instance_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean,
    Tensor? running_var, bool use_input_stats, float momentum, float eps, bool cudnn_enabled)
isnan(Tensor self)
layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None,
    float eps=1.0000000000000001e-05, bool cudnn_enable=True)
le.Tensor(Tensor self, Tensor other)
le.Scalar(Tensor self, Scalar other)
leaky_relu(Tensor self, Scalar negative_slope=0.01)
lift_fresh_copy(Tensor self)
linear(Tensor input, Tensor weight, Tensor? bias=None)
log(Tensor self)
lstm.input(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers,
    float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor, Tensor)
log1p(Tensor self)
log_softmax.int(Tensor self, int dim, ScalarType? dtype=None)
logical_and(Tensor self, Tensor other)
logical_not(Tensor self)
logical_or(Tensor self, Tensor other)
logical_xor(Tensor self, Tensor other)
lt.Tensor(Tensor self, Tensor other)
lt.Scalar(Tensor self, Scalar other)
mH(Tensor self)
mT(Tensor self)
masked_fill.Scalar(Tensor self, Tensor mask, Scalar value)
masked_fill.Tensor(Tensor self, Tensor mask, Tensor value)
masked_fill_.Scalar(Tensor self, Tensor mask, Scalar value)
masked_fill_.Tensor(Tensor self, Tensor mask, Tensor value)
matmul(Tensor self, Tensor other)
max.other(Tensor self, Tensor other)
max(Tensor self)
max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0],
    int[1] dilation=[1], bool ceil_mode=False)
max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0,
    int[2] dilation=1, bool ceil_mode=False)
max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0,
    int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)
max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0,
    int[3] dilation=1, bool ceil_mode=False)
maximum(Tensor self, Tensor other)
mean(Tensor self, *, ScalarType? dtype=None)
mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None)
min.other(Tensor self, Tensor other)
min(Tensor self)
min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)
minimum(Tensor self, Tensor other)
mish(Tensor self)
mm(Tensor self, Tensor mat2)
mm.dtype(Tensor self, Tensor mat2, ScalarType out_dtype)
mul.Tensor(Tensor self, Tensor other)
mul.Scalar(Tensor self, Scalar other)
mul_.Tensor(Tensor self, Tensor other)
mul_.Scalar(Tensor self, Scalar other)
narrow(Tensor self, int dim, SymInt start, SymInt length)
narrow.Tensor(Tensor self, int dim, Tensor start, SymInt length)
native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)
native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW,
    int group, float eps) -> (Tensor, Tensor, Tensor)
native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias,
    float eps) -> (Tensor, Tensor, Tensor)
ne.Tensor(Tensor self, Tensor other)
ne.Scalar(Tensor self, Scalar other)
ne.Tensor_list(Tensor[] a, Tensor[] b) -> bool
neg(Tensor self)
new_empty(Tensor self, SymInt[] size, *, FACTORY)
new_full(Tensor self, SymInt[] size, Scalar fill_value, *, FACTORY)
new_ones(Tensor self, SymInt[] size, *, FACTORY)
new_zeros(Tensor self, SymInt[] size, *, FACTORY)
numpy_T(Tensor self)
ones(SymInt[] size, *, FACTORY)
ones_like(Tensor self, *, FACTORY, MEMFMT)
pad(Tensor self, SymInt[] pad, str mode="constant", float? value=None)
permute(Tensor self, int[] dims)
pow.Tensor_Tensor(Tensor self, Tensor exponent)
pow.Tensor_Scalar(Tensor self, Scalar exponent)
pow.Scalar(Scalar self, Tensor exponent)
prod(Tensor self, *, ScalarType? dtype=None)
prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None)
reciprocal(Tensor self)
relu(Tensor self)
relu6(Tensor self)
relu_(Tensor self)
remainder.Tensor(Tensor self, Tensor other)
remainder.Scalar(Tensor self, Scalar other)
remainder.Scalar_Tensor(Scalar self, Tensor other)
repeat(Tensor self, SymInt[] repeats)
reshape(Tensor self, SymInt[] shape)
reshape_as(Tensor self, Tensor other)
round(Tensor self)
round.decimals(Tensor self, *, int decimals)
rsqrt(Tensor self)
rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1)
rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1)
scalar_tensor(Scalar s, *, FACTORY)
scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None,
    float dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False)
select.int(Tensor self, int dim, SymInt index)
sigmoid(Tensor self)
sigmoid_(Tensor self)
sign(Tensor self)
silu(Tensor self)
silu_(Tensor self)
sin(Tensor self)
slice.Tensor(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1)
softmax.int(Tensor self, int dim, ScalarType? dtype=None)
softplus(Tensor self, Scalar beta=1, Scalar threshold=20)
split.Tensor(Tensor self, SymInt split_size, int dim=0) -> Tensor[]
split.sizes(Tensor self, SymInt[] split_size, int dim=0) -> Tensor[]
split(Tensor self, int[] split_sizes, int dim=0) -> Tensor[]
split_with_sizes(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]
sqrt(Tensor self)
square(Tensor self)
squeeze(Tensor self)
squeeze.dim(Tensor self, int dim)
squeeze.dims(Tensor self, int[] dim)
stack(Tensor[] tensors, int dim=0)
std(Tensor self, bool unbiased=True)
std.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False)
std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False)
sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1)
sub.Scalar(Tensor self, Scalar other, Scalar alpha=1)
sub_.Tensor(Tensor self, Tensor other, *, Scalar alpha=1)
sub_.Scalar(Tensor self, Scalar other, Scalar alpha=1)
sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None)
sum(Tensor self, *, ScalarType? dtype=None)
sym_numel(Tensor self) -> SymInt
sym_size.int(Tensor self, int dim) -> SymInt
sym_size(Tensor self) -> SymInt[]
t(Tensor self)
tanh(Tensor self)
tanh_(Tensor self)
to.device(Tensor self, Device device, ScalarType dtype, bool non_blocking=False,
    bool copy=False, MEMFMT)
to.dtype(Tensor self, ScalarType dtype, bool non_blocking=False, bool copy=False, MEMFMT)
to.other(Tensor self, Tensor other, bool non_blocking=False, bool copy=False, MEMFMT)
to.dtype_layout(Tensor self, *, FACTORY, bool non_blocking=False, bool copy=False, MEMFMT)
topk(Tensor self, SymInt k, int dim=-1, bool largest=True, bool sorted=True) -> (Tensor values,
    Tensor indices)
transpose.int(Tensor self, int dim0, int dim1)
tril(Tensor self, SymInt diagonal=0)
triu(Tensor self, SymInt diagonal=0)
type_as(Tensor self, Tensor other)
unbind.int(Tensor self, int dim=0) -> Tensor[]
unflatten.int(Tensor self, int dim, SymInt[] sizes)
unsqueeze(Tensor self, int dim)
upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners,
    float? scales_h=None, float? scales_w=None)
upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners,
    float[]? scale_factors)
upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None,
    float? scales_w=None)
upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors)
var(Tensor self, bool unbiased=True)
var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False)
var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False)
view(Tensor self, SymInt[] size)
view.dtype(Tensor self, ScalarType dtype)
view_as(Tensor self, Tensor other)
where.self(Tensor condition, Tensor self, Tensor other)
where.ScalarOther(Tensor condition, Tensor self, Scalar other)
where.ScalarSelf(Tensor condition, Scalar self, Tensor other)
where.Scalar(Tensor condition, Scalar self, Scalar other)
where(Tensor condition) -> Tensor[]
zero_(Tensor self)
zeros(SymInt[] size, *, FACTORY)
zeros_like(Tensor self, *, FACTORY, MEMFMT)
"""
