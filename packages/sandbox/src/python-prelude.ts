/**
 * Run before the user's Python code (`sitecustomize`-like, by `-c` wrapping): matplotlib draws
 * off screen, `plt.show()` saves the open figures instead of opening a window, and at exit every
 * figure still open is saved too, as PNGs in the outputs directory, in order. The adapter returns
 * them as the call's images. Nothing is imported when the code does not use matplotlib.
 */
export function pythonPrelude(outputsDir: string): string {
  return `
import atexit as _ab_atexit, sys as _ab_sys
def _ab_save_figures():
    _plt = _ab_sys.modules.get('matplotlib.pyplot')
    if _plt is None:
        return
    import os
    for _n in _plt.get_fignums():
        _i = len([f for f in os.listdir(${JSON.stringify(outputsDir)}) if f.endswith('.png')])
        _plt.figure(_n).savefig(os.path.join(${JSON.stringify(outputsDir)}, 'figure-%03d.png' % _i))
    _plt.close('all')
class _AbFinder:
    def find_spec(self, name, path=None, target=None):
        if name == 'matplotlib.pyplot':
            import importlib.util
            _ab_sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            _ab_sys.meta_path.insert(0, self)
            if spec is not None and spec.loader is not None:
                _orig = spec.loader.exec_module
                def _exec(module):
                    _orig(module)
                    module.show = lambda *a, **k: _ab_save_figures()
                    # pyplot's own exit hook closes every figure; hooks run last-in first-out.
                    _ab_atexit.register(_ab_save_figures)
                spec.loader.exec_module = _exec
            return spec
        return None
_ab_sys.meta_path.insert(0, _AbFinder())
`;
}

/** The script python runs: the prelude, then the user's code from `file` as `__main__`. */
export function pythonMain(outputsDir: string, file: string): string {
  return (
    `${pythonPrelude(outputsDir)}\n` +
    `__ab_file = ${JSON.stringify(file)}\n` +
    `exec(compile(open(__ab_file).read(), __ab_file, 'exec'), {'__name__': '__main__', '__file__': __ab_file})\n`
  );
}
