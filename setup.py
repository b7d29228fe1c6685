"""Build hook (everything else is in pyproject.toml): the wheel carries the top-level notebooks/ and params/.

The repository keeps the notebooks and parameter files at the top level, where Jupyter users, ``make reproduce`` and
the nbval tests expect them; an installed wheel needs them inside the package.  This hook copies
``notebooks/*.ipynb`` and ``params/*.yaml`` into ``routebr_kit/resources/notebooks/`` and
``routebr_kit/resources/params/`` of the build tree only — nothing is duplicated in git, no symlink is needed, and
:mod:`routebr_kit.store.kitfiles` finds the checkout's folders first and the shipped copies otherwise.  An editable
install reads the checkout directly, so the hook copies nothing for it.  MANIFEST.in puts the same files into the
sdist, so a wheel built from the sdist carries them too.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
#: (top-level folder, file pattern) — the same pairs as routebr_kit.store.kitfiles.SHIPPED
SHIPPED = (("notebooks", "*.ipynb"), ("params", "*.yaml"))


class BuildPyWithKitFiles(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for folder, pattern in SHIPPED:
            files = sorted((HERE / folder).glob(pattern))
            if not files:
                raise SystemExit(f"setup.py: no {folder}/{pattern} to ship (a source tree without {folder}/?)")
            target = Path(self.build_lib) / "routebr_kit" / "resources" / folder
            self.mkpath(str(target))
            for path in files:
                self.copy_file(str(path), str(target / path.name))


setup(cmdclass={"build_py": BuildPyWithKitFiles})
