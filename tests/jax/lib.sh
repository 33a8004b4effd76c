# lib.sh - shared by the JAX test scripts (sourced): the collector tests'
# helpers (STPROF, T, fail, skip, expect_eq, field), plus JAXPY, a Python
# with jax[cpu], flax and optax (scripts/deps.sh check installs them in
# $STPROF_JAX_VENV, default ~/.cache/stprof/jax-venv), TRAIN (the test
# program, jax_train.py) and markers FILE (a trace's iteration and phase
# markers as KIND:NAME:VALUE words, annotations left out).
. "$(dirname "$0")/../collector/lib.sh"
JAXPY="${STPROF_JAX_VENV:-$HOME/.cache/stprof/jax-venv}/bin/python"
"$JAXPY" -c 'import jax, flax, optax' 2>/dev/null || fail "no JAX at $JAXPY (scripts/deps.sh check installs it)"
TRAIN="$STPROF_SRC/tests/jax/jax_train.py"
export JAX_PLATFORMS=cpu OMP_NUM_THREADS=1
markers() {
	"$STPROF" dump -t marker "$1" | grep -v 'kind=annotation' |
		sed 's/.* kind=\([a-z_]*\) name="\([^"]*\)" value=\(-*[0-9]*\).*/\1:\2:\3/' | tr '\n' ' '
}
