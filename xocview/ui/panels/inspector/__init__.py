"""The inspector: the selected node, tensor or (with nothing selected) the whole graph.

A tree of name/value rows; tensors and nodes named in it are links (double-click selects
them), and every value can be copied (Ctrl+C or the context menu). A weight with values also
gets statistics rows, a histogram and a "Save as .npy..." button under the tree.
"""

from xocview.ui.panels.inspector.cells import cell_text
from xocview.ui.panels.inspector.values import npy_name, write_npy
from xocview.ui.panels.inspector.widget import Inspector

__all__ = ["Inspector", "cell_text", "npy_name", "write_npy"]
