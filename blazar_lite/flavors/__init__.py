"""Flavors: named instance sizes (vcpus, ram, disk, extra specs), public or shared with projects."""
