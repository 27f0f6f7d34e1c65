# The two commands of the README work on a fresh Debian 12 machine (root):
#   make demo   set everything up, start the local rack and its stand-in
#               control plane, run playbooks/site.yml (acceptance last)
#   make test   set everything up, run every check CI runs (.ci/run)
# Every step is idempotent and cached; `make clean` removes the bench.

VENV := .venv
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
# Colour and a wide terminal for people; CI logs stay readable either way.
export ANSIBLE_FORCE_COLOR ?= 1

.PHONY: setup host venv images mirror demo test clean

setup: host venv images mirror

host:
	python3 tests/bench/bench.py host

venv: $(VENV)/.installed

# The pinned dependencies, then the gpuops command from this checkout (its own dependencies are those pins).
$(VENV)/.installed: requirements.txt requirements-dev.txt pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --no-deps -e .
	touch $@

images: host
	python3 tests/bench/bench.py images

mirror: images
	python3 tests/bench/bench.py mirror

demo: setup
	python3 tests/bench/bench.py rack up
	ansible-playbook -i inventory/local.yml tests/bench/control_plane.yml
	ansible-playbook -i inventory/local.yml playbooks/site.yml

test: setup
	python3 tests/run.py

clean:
	python3 tests/bench/bench.py clean
	rm -rf $(VENV) tests/output
