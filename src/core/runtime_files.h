// Where kgym finds what it runs besides itself, by one rule for every caller: the Python interpreter of every
// subprocess it starts (the evaluator's zygote, the learner, the parquet reader), kgym's Python packages
// (kgym_harness, kgym_train) and the packages setup.sh installs for them (train-pkgs: tokenizers, safetensors,
// pyarrow). Prompt templates and the training defaults are compiled into the binary and need no file.
//
// Interpreter: the one configured for this run (--python, learner.python), else $KGYM_PYTHON, else the first of
// /usr/bin/python3 (Debian's, where python3-torch lives) and python3 on PATH that has torch (asked once per process
// with importlib.util.find_spec, which does not import it), else /usr/bin/python3 when it exists, else python3. So
// a torch-less python3 first on PATH (a pyenv or venv one) is passed over on a Debian machine, and a GPU machine
// whose torch lives in the python3 on PATH (not in /usr/bin's) needs no setting either.
//
// Packages (python/kgym_harness, python/kgym_train): $KGYM_HARNESS_PATH / $KGYM_TRAIN_PATH when set (a folder
// holding the package; kgym_train is also taken from $KGYM_HARNESS_PATH's folder when it holds it); else, for a binary
// that still sits in the build folder it was compiled in while that build's source tree exists, the source tree's
// python/ (an edit there takes effect without a rebuild); else the copy the build stages and `cmake --install` installs
// beside the binary: <root>/share/kgym/python, where root is the binary's folder's parent (installed:
// <prefix>/bin/kgym), its grandparent (a build folder copied elsewhere: build/src/cli/kgym) or the binary's folder
// itself (a packed folder: dir/kgym).
//
// Learner packages: $KGYM_TRAIN_PKGS, else <build>/train-pkgs of the build folder the binary sits in (or was
// copied with), else <prefix>/share/kgym/train-pkgs; "" when none exists.
//
// Thread-safe; the layout is worked out once per process.
#pragma once

#include <string>

namespace kgym {

// The interpreter to run: `configured` when not empty, else by the rule above.
std::string PythonInterpreter(const std::string& configured = "");

// The folder to put on PYTHONPATH so that `package` ("kgym_harness" or "kgym_train") imports; "" when none holds it.
std::string PythonPackageDir(const std::string& package);

// setup.sh's private packages for the learner and the parquet reader; "" when there are none.
std::string LearnerPackagesDir();

// Where the runtime files were looked for, for error messages ("set KGYM_HARNESS_PATH" alone helps nobody).
std::string RuntimeSearchDescription(const std::string& package);

}  // namespace kgym
