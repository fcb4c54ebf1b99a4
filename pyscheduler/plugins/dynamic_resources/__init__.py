"""DynamicResources (Dynamic Resource Allocation), being built step by step.

So far only the CEL environment of DeviceClass and request selectors exists (``cel``); the plugin
itself is not registered yet, so a profile enabling DynamicResources is still rejected.
"""
