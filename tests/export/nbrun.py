"""Executing notebooks with nbclient, several in one python3 kernel (one kernel start and one torch
import for all on a 2-core machine): each notebook runs top to bottom as nbclient's own
``execute()`` does (its cells in order, the widgets' state saved in its metadata), and the kernel's
namespace is cleared with ``%reset -f`` between notebooks, so none can use another's variables."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient


def execute_all(notebooks: list, cwd: Path, timeout: int = 180) -> list:
    """Run every notebook (nbformat nodes, changed in place and returned) in one kernel started in ``cwd``."""
    client = NotebookClient(nbformat.v4.new_notebook(), timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(cwd)}})
    with client.setup_kernel():
        for nb in notebooks:
            reset = nbformat.v4.new_code_cell("get_ipython().run_line_magic('reset', '-f')")
            client.nb = nbformat.v4.new_notebook(cells=[reset])
            client.execute_cell(reset, 0)
            client.nb = nb
            client.reset_execution_trackers()
            for index, cell in enumerate(nb.cells):
                client.execute_cell(cell, index, execution_count=client.code_cells_executed + 1)
            client.set_widgets_metadata()
    return notebooks
