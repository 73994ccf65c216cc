"""The machine the suite runs on, as the standard library sees it: its GPUs as nvidia-smi lists
them (`gpus`, `nvidia_smi`), its CPUs and a process's affinity (`cpus`). Neutral: the host's
sessions, the run side and the child all read it, and it imports nothing of theirs."""
