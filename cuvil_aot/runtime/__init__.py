"""What a built module needs at import and call time, on the Python side: the extension
loader, the binding of marked functions to compiled code, the GPU adapters. The C half
is ``cuvil_aot.runtime.native`` (native/). Nothing here knows the compiler."""
