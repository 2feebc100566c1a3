"""Write docs/dashboards/: one page per dashboard the platform provisions, from the dashboards'
own code (components/dashboards.py docs_page), and an index. `make dashboard-docs` runs it;
tests/test_dashboards.py fails when a page is out of date.

    .venv/bin/python scripts/dashboard_docs.py [FOLDER]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from addons.gpu_operator.dashboards import DASHBOARDS as GPU  # noqa: E402
from addons.karpenter.dashboards import DASHBOARDS as KARPENTER  # noqa: E402
from addons.kuberay.dashboards import DASHBOARDS as RAY  # noqa: E402
from addons.kueue.dashboards import DASHBOARDS as QUEUES  # noqa: E402
from addons.monitoring.dashboards import DASHBOARDS as EFA  # noqa: E402
from components.dashboards import docs_page  # noqa: E402

FOLDER = ROOT / "docs" / "dashboards"
BY_ADDON = {"gpu_operator": GPU, "monitoring": EFA, "kueue": QUEUES, "karpenter": KARPENTER, "kuberay": RAY}


def pages() -> dict[str, str]:
    """File name -> text of every page, the index included."""
    found = {}
    index = [
        "# Dashboards",
        "",
        "<!-- Written by `make dashboard-docs`; edit the dashboards' code, not these pages. -->",
        "",
        "Grafana loads these when their add-on is on (docs/addons/monitoring.md says how).",
        "",
    ]
    for add_on, models in BY_ADDON.items():
        for model in models:
            found[f"{model['uid']}.md"] = docs_page(model, add_on=add_on)
            index.append(f"- [{model['title']}]({model['uid']}.md) (`{add_on}`): {model['description']}")
    found["README.md"] = "\n".join(index) + "\n"
    return found


def main() -> int:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    written = pages()
    for stale in folder.glob("*.md"):
        if stale.name not in written:
            stale.unlink()
    for name, text in written.items():
        (folder / name).write_text(text)
    print(f"wrote {len(written)} pages to {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
