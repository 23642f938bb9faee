"""xocview/formats/op_table.py: rule selection and attribute translation."""

from __future__ import annotations

from xocview.formats.op_table import Rule, symmetric_pads, translate

TABLE = {
    "Convolution": [Rule("Conv", {"kernel": "kernel_shape", "pad": ("pads", symmetric_pads)})],
    "Activation": [
        Rule("Relu", when={"act_type": "relu"}),
        Rule("Sigmoid", when={"act_type": "sigmoid"}),
    ],
    "Pooling": [
        Rule(
            "MaxPool", {"kernel": "kernel_shape"}, when={"pool_type": "max"}, fixed={"ceil_mode": 0}
        )
    ],
}


def test_attributes_are_renamed_and_converted_and_the_rest_kept_apart() -> None:
    t = translate(TABLE, "Convolution", {"kernel": [3, 3], "pad": [1, 2], "workspace": 1024})
    assert t is not None
    assert t.op_type == "Conv"
    assert t.attributes == {"kernel_shape": [3, 3], "pads": [1, 2, 1, 2]}
    assert t.unmapped == {"workspace": 1024}


def test_rules_are_chosen_by_attribute_values() -> None:
    relu = translate(TABLE, "Activation", {"act_type": "relu"})
    sig = translate(TABLE, "Activation", {"act_type": "Sigmoid"})
    assert relu is not None and relu.op_type == "Relu" and relu.unmapped == {}
    assert sig is not None and sig.op_type == "Sigmoid"
    assert translate(TABLE, "Activation", {"act_type": "softrelu"}) is None


def test_fixed_attributes_and_unknown_ops() -> None:
    t = translate(TABLE, "Pooling", {"pool_type": "max", "kernel": [2, 2]})
    assert t is not None and t.attributes == {"ceil_mode": 0, "kernel_shape": [2, 2]}
    assert translate(TABLE, "Pooling", {"pool_type": "avg"}) is None
    assert translate(TABLE, "Custom", {}) is None
