# Tessera: the two commands a newcomer needs.
#   make demo   installs what is missing, builds, and runs `tessera demo`
#   make test   installs what is missing, builds, and runs every test with ctest
# More: make build | make test-asan (AddressSanitizer+UBSan) | make test-tsan (ThreadSanitizer,
# concurrent tests) | make bench | make install PREFIX=... | make format | make clean

BUILD_DIR  ?= build
ASAN_DIR   ?= build-asan
TSAN_DIR   ?= build-tsan
PREFIX     ?= /usr/local
JOBS       ?= $(shell nproc)
# Release with assertions on: -O2 without -DNDEBUG.
CMAKE_ARGS ?= -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE=-O2 -DCMAKE_C_FLAGS_RELEASE=-O2
CTEST_ARGS ?= --output-on-failure -j $(JOBS) --timeout 900
# The Python of bindings/python (nanobind, scikit-build-core, pytest, numpy): python3 when it has
# them, else a venv in the build folder that `make deps` fills from PyPI (Debian's python3 is
# externally managed, so nothing is installed into it).
PYTHON_VENV ?= $(BUILD_DIR)/pyenv
PYTHON ?= $(shell python3 -c "import nanobind, numpy, pytest" >/dev/null 2>&1 && command -v python3 || echo $(CURDIR)/$(PYTHON_VENV)/bin/python3)
PY_CMAKE_ARGS = -DPython_EXECUTABLE=$(PYTHON)

.PHONY: all deps python-deps configure build demo test test-asan test-tsan bench install format clean

all: build

deps:
	@bash build_tools/install-deps.sh
	@$(MAKE) --no-print-directory python-deps

python-deps:
	@if ! $(PYTHON) -c "import nanobind, numpy, pytest" >/dev/null 2>&1; then \
	  echo "python-deps: installing nanobind scikit-build-core pytest numpy into $(PYTHON_VENV)"; \
	  python3 -m venv $(PYTHON_VENV) && \
	  $(PYTHON_VENV)/bin/python3 -m pip install -q nanobind scikit-build-core pytest numpy; \
	fi

$(BUILD_DIR)/build.ninja: | deps
	cmake -S . -B $(BUILD_DIR) $(CMAKE_ARGS) $(PY_CMAKE_ARGS)

configure: deps
	cmake -S . -B $(BUILD_DIR) $(CMAKE_ARGS) $(PY_CMAKE_ARGS)

build: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS)

demo: build
	$(BUILD_DIR)/tools/tessera demo

test: build
	ctest --test-dir $(BUILD_DIR) $(CTEST_ARGS)

# The whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer (no benchmarks).
test-asan: deps
	cmake -S . -B $(ASAN_DIR) $(CMAKE_ARGS) -DTESSERA_SANITIZE=address -DTESSERA_BUILD_BENCHMARKS=OFF
	cmake --build $(ASAN_DIR) -j $(JOBS)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  ctest --test-dir $(ASAN_DIR) $(CTEST_ARGS) -LE 'slow|fuzz'

# The concurrent tests (ctest label "tsan") under ThreadSanitizer.
test-tsan: deps
	cmake -S . -B $(TSAN_DIR) $(CMAKE_ARGS) -DTESSERA_SANITIZE=thread -DTESSERA_BUILD_BENCHMARKS=OFF
	cmake --build $(TSAN_DIR) -j $(JOBS) --target tsan_tests
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/build_tools/tsan.supp" \
	  ctest --test-dir $(TSAN_DIR) $(CTEST_ARGS) -L tsan

bench: build
	$(BUILD_DIR)/benchmarks/ifrt/reshard_benchmark

install: build
	cmake --install $(BUILD_DIR) --prefix $(PREFIX)

format:
	git ls-files '*.h' '*.cc' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(TSAN_DIR)
