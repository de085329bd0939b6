"""In a Jupyter notebook, a figure of the library shows as an image when it is a cell's value (no pyplot, no
backend set) and ``progress=True`` draws a live bar as an output of the cell, not lines on standard error
(docs/theory/sweeps.md §6). The notebook runs in a real kernel (nbclient)."""

from __future__ import annotations

import base64

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

CELLS = [
    # a fresh kernel: nothing imported, no %matplotlib magic, the backend left as the kernel has it
    "import matplotlib\nbackend = matplotlib.get_backend()",
    "from attnphys.plots import new_figure\nfig = new_figure((3, 2))\nfig.subplots().plot([0, 1], [1, 0])\nfig",
    "from attnphys import clouds\nds = clouds.clustering_diagram([0.5, 1.0, 2.0], dim=3, tokens=6, t_max=1.0, saves=3,"
    " samples=1, progress=True)",
    "import sys; print(matplotlib.get_backend() == backend, 'matplotlib.pyplot' in sys.modules)",
]


@pytest.fixture(scope="module")
def executed():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
    nbclient.NotebookClient(nb, timeout=600, kernel_name="python3").execute()
    return nb


@pytest.mark.slow
def test_a_figure_shows_as_an_image(executed):
    outs = executed.cells[1].outputs
    pngs = [o for o in outs if o.output_type == "execute_result" and "image/png" in o.get("data", {})]
    assert len(pngs) == 1, outs
    assert base64.b64decode(pngs[0]["data"]["image/png"]).startswith(b"\x89PNG")


def test_progress_is_a_live_output_not_stderr_lines(executed):
    outs = executed.cells[2].outputs
    bars = [o for o in outs if o.output_type == "display_data" and "text/html" in o.get("data", {})]
    assert len(bars) == 1, outs
    html = bars[0]["data"]["text/html"]
    assert "<progress" in html and 'value="3"' in html and 'max="3"' in html, html  # updated to the end
    assert not [o for o in outs if o.output_type == "stream" and o.get("name") == "stderr" and "points" in o.text]


def test_the_users_backend_and_pyplot_are_untouched(executed):
    assert executed.cells[3].outputs[0].text.split() == ["True", "False"]
