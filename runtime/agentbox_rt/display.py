# Rich results of the python kernel, as a notebook shows them: an object's representations
# (text always, plus html, markdown, svg, png, jpeg, json, latex when it has the Jupyter
# `_repr_*_` methods), matplotlib figures as PNG, `display()`, and sending them to the supervisor.
# matplotlib is only touched when user code imported it (sys.modules), so plain runs pay nothing.
import base64
import json
import sys
from importlib.machinery import PathFinder

REPR_METHODS = (
    ("_repr_html_", "html"),
    ("_repr_markdown_", "markdown"),
    ("_repr_svg_", "svg"),
    ("_repr_png_", "png"),
    ("_repr_jpeg_", "jpeg"),
    ("_repr_latex_", "latex"),
    ("_repr_json_", "json"),
)
MIME_KEYS = {
    "text/plain": "text",
    "text/html": "html",
    "text/markdown": "markdown",
    "image/svg+xml": "svg",
    "image/png": "png",
    "image/jpeg": "jpeg",
    "text/latex": "latex",
    "application/json": "json",
}
BINARY = ("png", "jpeg")


def _repr_value(key, value):
    """A representation as it travels in JSON: images base64, everything else as given."""
    if isinstance(value, tuple) and len(value) == 2:  # (data, metadata), as Jupyter allows
        value = value[0]
    if value is None:
        return None
    if key in BINARY:
        if isinstance(value, str):
            return value  # already base64, as Jupyter's formatters accept
        if isinstance(value, (bytes, bytearray, memoryview)):
            return base64.b64encode(bytes(value)).decode("ascii")
        return None
    if key == "json":
        return value
    return value if isinstance(value, str) else str(value)


def _figure_class():
    mod = sys.modules.get("matplotlib.figure")
    return getattr(mod, "Figure", None) if mod is not None else None


def figure_bundle(fig):
    import io

    buf = io.BytesIO()
    # Saved as Jupyter's inline backend saves it: cropped to what is drawn, so tick labels, titles
    # and legends outside the axes (a long rotated x label) are in the image, not cut at its edge.
    # A figure with nothing drawn has no tight box: it is saved at its size.
    drawn = fig.axes or fig.texts or fig.images or fig.lines or fig.legends
    fig.savefig(buf, format="png", **({"bbox_inches": "tight"} if drawn else {}))
    return {"text": repr(fig), "png": base64.b64encode(buf.getvalue()).decode("ascii")}


def bundle(obj):
    """Every representation of obj: text (its repr) plus what its _repr_*_ methods give."""
    fig_cls = _figure_class()
    if fig_cls is not None and isinstance(obj, fig_cls):
        return figure_bundle(obj)
    out = {}
    # A class has these as plain functions; only an instance's methods are representations.
    if not isinstance(obj, type):
        mimebundle = getattr(obj, "_repr_mimebundle_", None)
        if callable(mimebundle):
            try:
                data = mimebundle()
                if isinstance(data, tuple):
                    data = data[0]
                for mime, value in (data or {}).items():
                    key = MIME_KEYS.get(mime)
                    if key is not None and key != "text":
                        v = _repr_value(key, value)
                        if v is not None:
                            out[key] = v
            except Exception:  # noqa: BLE001 - a broken representation is skipped, as Jupyter does
                pass
        for attr, key in REPR_METHODS:
            if key in out:
                continue
            method = getattr(obj, attr, None)
            if callable(method):
                try:
                    v = _repr_value(key, method())
                except Exception:  # noqa: BLE001
                    continue
                if v is not None:
                    out[key] = v
    try:
        out["text"] = repr(obj)
    except Exception as e:  # noqa: BLE001
        out["text"] = "<unrepresentable %s: %s>" % (type(obj).__name__, e)
    return out


class Results:
    """A run's results, sent one line each on the kernel's control socket before its reply."""

    def __init__(self, ctl):
        self.ctl = ctl
        self.cap = 10 << 20
        self.shown = set()  # figures already sent in this run (by id), so a figure is sent once

    def begin(self, cap):
        self.cap = cap
        self.shown.clear()

    def send(self, data, main=False):
        if main:
            data["is_main_result"] = True
        line = json.dumps({"result": data}, ensure_ascii=False, default=repr).encode("utf-8", "surrogateescape")
        if len(line) > self.cap:
            # Not even sent: the supervisor would drop it anyway. It says so in the run's error.
            line = json.dumps({"result_dropped": len(line)}).encode()
        # On a line of its own, whatever a cell may have left unfinished on the socket.
        self.ctl.sendall(b"\n" + line + b"\n")

    def display(self, *objs):
        for obj in objs:
            fig_cls = _figure_class()
            if fig_cls is not None and isinstance(obj, fig_cls):
                self.shown.add(id(obj))
            self.send(bundle(obj))

    def value(self, value):
        """The cell's last expression: its main result."""
        fig_cls = _figure_class()
        if fig_cls is not None and isinstance(value, fig_cls):
            self.shown.add(id(value))
        self.send(bundle(value), main=True)

    def figure(self, fig):
        if id(fig) in self.shown:
            return
        self.shown.add(id(fig))
        self.send(figure_bundle(fig))

    def flush_figures(self):
        """At the end of a run: every figure pyplot still has open becomes a result, then is closed."""
        helpers = sys.modules.get("matplotlib._pylab_helpers")
        if helpers is None:
            return
        managers = helpers.Gcf.get_all_fig_managers()
        for manager in managers:
            try:
                self.figure(manager.canvas.figure)
            except Exception as e:  # noqa: BLE001 - a figure that cannot be drawn is reported, not fatal
                sys.stderr.write("figure %s could not be drawn: %s: %s\n" % (manager.num, type(e).__name__, e))
        if managers:
            helpers.Gcf.destroy_all()


def hook_matplotlib(results, before_import):
    """`plt.show()` / `fig.show()` with the non-interactive backend send the figure as a result and
    close it, as a notebook's inline backend does. Installed when matplotlib.backend_bases is
    imported (an import hook that looks only for that name), or at once if it already is.
    `before_import` is called just before matplotlib itself is first imported."""

    def patch(backend_bases):
        def show(manager):
            results.figure(manager.canvas.figure)
            helpers = sys.modules.get("matplotlib._pylab_helpers")
            if helpers is not None:
                helpers.Gcf.destroy(manager)

        backend_bases.FigureManagerBase.show = show

    if "matplotlib.backend_bases" in sys.modules:
        patch(sys.modules["matplotlib.backend_bases"])
        return

    class Finder:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name == "matplotlib":
                before_import()
                return None
            if name != "matplotlib.backend_bases":
                return None
            sys.meta_path.remove(Finder)
            spec = PathFinder.find_spec(name, path)
            if spec is None or spec.loader is None:
                return spec
            loader_exec = spec.loader.exec_module

            def exec_module(module):
                loader_exec(module)
                patch(module)

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, Finder)
