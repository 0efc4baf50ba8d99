"""The example's routes (the same as the Flask example's)."""

from django.urls import path

from site_app import views

urlpatterns = [
    path("", views.page),
    path("turns", views.start_turn),
    path("turns/<str:turn_id>/events", views.events),
    path("turns/<str:turn_id>/approve", views.approve),
    path("turns/<str:turn_id>/cancel", views.cancel),
]
